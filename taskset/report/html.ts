// The report as ONE self-contained HTML file: inline CSS and inline SVG drawn here, no script, no external
// resource, so it opens from disk in any browser with no server and no network. Every plotted number and every
// numeric table cell carries its exact value in `data-value` (the CSV's text), so a test can hold the page to the CSV.
import { csvField } from './csv.ts';
import { ALL_FAMILIES, ATTEMPT_COLUMNS, BOOTSTRAP, SUMMARY_COLUMNS, type AttemptRow, type SummaryRow } from './table.ts';

/** What the page says about its own making. */
export type ReportMeta = { command: string; package_version: string; args: Record<string, unknown>; generated_at: string; inputs: string[] };

/** The metrics drawn, one chart each per target: the summary column and its title. */
const CHARTS = [
  { metric: 'mean_reward', title: 'Mean reward (whiskers: 95 % bootstrap interval)' },
  { metric: 'mean_gain', title: 'Mean gain' },
  { metric: 'mean_retention', title: 'Mean retention (overall)' },
] as const satisfies readonly { metric: keyof SummaryRow; title: string }[];

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

/** Chart geometry in px. Every metric lies in [0, 1], so all charts share the y scale. */
const G = { bar: 14, barGap: 2, groupGap: 20, plotHeight: 200, left: 44, right: 12, top: 12, charWidth: 7 };

export function renderHtml(rows: readonly AttemptRow[], summary: readonly SummaryRow[], meta: ReportMeta): string {
  const editors = [...new Set(summary.map((s) => s.editor))].sort();
  const colour = (editor: string) => PALETTE[editors.indexOf(editor) % PALETTE.length]!;
  const targets = unique(summary.map((s) => JSON.stringify([s.model_id, s.revision]))).map((t) => JSON.parse(t) as [string, string]);
  const sections = targets.map(([model, revision]) => {
    const own = summary.filter((s) => s.model_id === model && s.revision === revision);
    const families = unique(own.filter((s) => s.family !== ALL_FAMILIES).map((s) => s.family));
    const charts = CHARTS.map(({ metric, title }) => `<figure><figcaption>${esc(title)}</figcaption>${chart(own, metric, families, editors, colour)}</figure>`);
    return `<section><h2>${esc(model)} <small>@ ${esc(revision)}</small></h2>${legend(editors, colour)}<div class="charts">${charts.join('')}</div></section>`;
  });
  const versions = unique(rows.map((r) => `package ${r.package_version}, families ${r.family_version}, ${r.model_id} @ ${r.revision}`));
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>IWIBench report</title>
<style>${CSS}</style>
</head>
<body>
<h1>IWIBench report</h1>
<dl class="meta">
<dt>Generated</dt><dd>${esc(meta.generated_at)} by iwibench-ts ${esc(meta.package_version)}</dd>
<dt>Command</dt><dd><code>${esc(meta.command)}</code></dd>
<dt>Arguments</dt><dd><code>${esc(JSON.stringify(meta.args))}</code></dd>
<dt>Inputs</dt><dd>${meta.inputs.map((i) => `<code>${esc(i)}</code>`).join(', ')}</dd>
<dt>Results from</dt><dd>${versions.map(esc).join('<br>')}</dd>
<dt>Attempts</dt><dd>${rows.length}, by ${editors.length} editor(s): ${editors.map(esc).join(', ')}</dd>
<dt>Interval</dt><dd>95 % percentile bootstrap of the mean reward, ${BOOTSTRAP.resamples.toLocaleString('en')} resamples, seeded per group from "${esc(BOOTSTRAP.seed)}" (same results, same interval)</dd>
</dl>
${sections.join('\n')}
<section><h2>Means by target, editor and family</h2>${table(SUMMARY_COLUMNS, summary, 'summary')}</section>
<section><h2>Attempts</h2>${table(ATTEMPT_COLUMNS, rows, 'attempts')}</section>
</body>
</html>
`;
}

/** Grouped bars: one group per family, one bar per editor; the reward chart adds interval whiskers. */
function chart(summary: readonly SummaryRow[], metric: (typeof CHARTS)[number]['metric'], families: string[], editors: string[], colour: (e: string) => string): string {
  const groupWidth = editors.length * (G.bar + G.barGap) - G.barGap;
  const width = G.left + families.length * (groupWidth + G.groupGap) + G.right;
  // Family names run downwards under their group, so they never overlap or leave the chart sideways.
  const bottom = 16 + G.charWidth * Math.max(0, ...families.map((f) => f.length));
  const height = G.top + G.plotHeight + bottom;
  const y = (v: number) => px(G.top + (1 - v) * G.plotHeight);
  const parts: string[] = [];
  parts.push(`<rect class="plot-area" x="${G.left}" y="${G.top}" width="${width - G.left - G.right}" height="${G.plotHeight}"/>`);
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line class="grid" x1="${G.left}" x2="${width - G.right}" y1="${y(tick)}" y2="${y(tick)}"/>`);
    parts.push(`<text class="tick" x="${G.left - 6}" y="${y(tick)}" dy="0.32em" text-anchor="end">${tick.toFixed(2)}</text>`);
  }
  families.forEach((family, f) => {
    const x0 = G.left + G.groupGap / 2 + f * (groupWidth + G.groupGap);
    editors.forEach((editor, e) => {
      const s = summary.find((r) => r.family === family && r.editor === editor);
      if (!s) return; // this editor made no attempt in this family: an empty slot
      const value = s[metric];
      const x = x0 + e * (G.bar + G.barGap);
      const ids = `data-model-id="${esc(s.model_id)}" data-revision="${esc(s.revision)}" data-editor="${esc(editor)}" data-family="${esc(family)}"`;
      parts.push(
        `<rect class="bar" ${ids} data-metric="${metric}" data-value="${csvField(value)}" x="${x}" y="${y(value)}" width="${G.bar}" height="${px(value * G.plotHeight)}" fill="${colour(editor)}">` +
          `<title>${esc(editor)} · ${esc(family)}: ${metric} ${value.toFixed(3)} (n = ${s.n})</title></rect>`,
      );
      if (metric === 'mean_reward') {
        const cx = px(x + G.bar / 2);
        parts.push(`<line class="ci" ${ids} data-metric="reward_ci95" data-low="${csvField(s.reward_ci95_low)}" data-high="${csvField(s.reward_ci95_high)}" x1="${cx}" x2="${cx}" y1="${y(s.reward_ci95_low)}" y2="${y(s.reward_ci95_high)}"/>`);
      }
    });
    const labelX = px(x0 + groupWidth / 2);
    const labelY = G.top + G.plotHeight + 8;
    parts.push(`<text class="family" x="${labelX}" y="${labelY}" dy="0.32em" transform="rotate(-90 ${labelX} ${labelY})" text-anchor="end">${esc(family)}</text>`);
  });
  return `<svg class="chart" data-metric="${metric}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">${parts.join('')}</svg>`;
}

function legend(editors: string[], colour: (e: string) => string): string {
  return `<p class="legend">${editors.map((e) => `<span><i style="background:${colour(e)}"></i>${esc(e)}</span>`).join('')}</p>`;
}

/** A table of records; numbers are shown to 3 decimals (integers whole) and carry their exact value in data-value. */
function table<T extends Record<string, unknown>>(columns: readonly (keyof T & string)[], records: readonly T[], name: string): string {
  const head = columns.map((c) => `<th>${esc(c)}</th>`).join('');
  const body = records.map((r) => {
    const cells = columns.map((c) => {
      const v = r[c];
      if (typeof v !== 'number') return `<td data-column="${c}">${esc(v === null || v === undefined ? '' : String(v))}</td>`;
      return `<td class="num" data-column="${c}" data-value="${csvField(v)}">${Number.isInteger(v) ? v : v.toFixed(3)}</td>`;
    });
    return `<tr>${cells.join('')}</tr>`;
  });
  return `<div class="scroll"><table class="${name}"><thead><tr>${head}</tr></thead><tbody>${body.join('\n')}</tbody></table></div>`;
}

const unique = (values: string[]): string[] => [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const px = (v: number): string => String(Math.round(v * 100) / 100);
const esc = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h2 small { font-weight: normal; color: #666; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 4px; }
.plot-area { fill: #fafafa; stroke: #ccc; } .grid { stroke: #e4e4e4; } .ci { stroke: #222; stroke-width: 1.5; }
.tick, .family { font-size: 11px; fill: #444; }
.legend span { margin-right: 16px; } .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; } th, td { border: 1px solid #ddd; padding: 2px 6px; white-space: nowrap; }
th { background: #f3f3f3; position: sticky; top: 0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
`;
