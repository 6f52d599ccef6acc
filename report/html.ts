// The scoreboard, report.html: ONE self-contained page (inline CSS and SVG drawn here, no script, no external
// resource), so it opens from disk in any browser with no server and no network. Every plotted number and every
// numeric table cell carries its exact value in `data-value` (the CSV's text), so a test can hold the page to the
// CSV. Each attempt row links to the attempt's own page (attempt-page.ts), written next to it by `report`.
import { csvField } from './csv.ts';
import { TOY_CAVEAT, TOY_MODEL_ID, argsTable, esc, num, page, px } from './html-kit.ts';
import { ALL_FAMILIES, BOOTSTRAP, SUMMARY_COLUMNS, type AttemptRow, type SummaryRow } from './table.ts';
import type { EfficiencyRow } from './token-efficiency.ts';

/** What the page says about its own making. */
export type ReportMeta = {
  command: string;
  package_version: string;
  args: Record<string, unknown>;
  generated_at: string;
  inputs: string[];
};

/** A replay of one attempt's patch with a new control seed (scripts/replay-patch.ts). */
export type ReplayRow = {
  editor: string;
  family: string;
  seed: number;
  original_control_seed: number;
  control_seed: number;
  original_reward: number;
  reward: number;
  new_controls: { base_correct: number; retained: number; retention: number | null };
  repeated_controls: { base_correct: number; retained: number; retention: number | null };
  /** The replayed attempt's page and results.json, when the attempt is in this report. */
  original_page: string | null;
  original_results_json: string | null;
  original: string;
  results_json: string;
};

/** The parts of the scoreboard beyond the two tables. */
export type ScoreboardExtras = {
  /** Per attempt (keyed by results_json): its page, relative to report.html. */
  pages: ReadonlyMap<string, string>;
  /** Per attempt (keyed by results_json): editor tokens (input + output), or null when unknown. */
  editorTokens: ReadonlyMap<string, number | null>;
  replays: readonly ReplayRow[];
  /** Token efficiency per editor: the per-family and all-families rows, or why there are none. */
  efficiency: readonly { editor: string; rows: EfficiencyRow[] | null; note?: string }[];
};

/** The metrics drawn, one chart each per target: the summary column and its title. */
const CHARTS = [
  { metric: 'mean_reward', title: 'Mean reward', whiskers: true },
  { metric: 'mean_gain', title: 'Mean gain', whiskers: false },
  { metric: 'mean_retention', title: 'Mean retention (overall)', whiskers: false },
] as const satisfies readonly { metric: keyof SummaryRow; title: string; whiskers: boolean }[];

export const DEFINITIONS = {
  gain: 'gain = max(0, (edited − base) / (1 − base)), where base and edited are the shares of target items the pristine and the patched model pass (0 when base is 1: no headroom)',
  retention:
    'retention = of the retention items (64 general controls, preservation items, overrides) the pristine model passes, the share the patched model still passes (1 when it passes none)',
  reward: 'reward = gain × retention, per attempt; the tables and charts show means over attempts',
} as const;

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

/** Chart geometry in px. Every metric lies in [0, 1], so all charts share the y scale; `top` holds the value labels. */
const G = { bar: 16, barGap: 3, groupGap: 22, plotHeight: 200, left: 44, right: 12, top: 64, charWidth: 7 };

/** The attempt columns the page shows, key ones first; the rest are in results.csv and on each attempt's page. */
const SHOWN_COLUMNS = [
  ['attempt', 'Attempt'],
  ['editor', 'Editor'],
  ['family', 'Family'],
  ['seed', 'Seed'],
  ['reward', 'Reward'],
  ['gain', 'Gain'],
  ['target_success_base', 'Target base'],
  ['target_success_edited', 'Target edited'],
  ['retention_overall', 'Retention'],
  ['retention_general_controls', 'Controls'],
  ['retention_spillover', 'Spillover'],
  ['retention_overrides', 'Overrides'],
  ['patch_ops', 'Ops'],
  ['changed_parameters', 'Changed params'],
  ['max_relative_delta', 'Max ‖ΔW‖/‖W‖'],
  ['tool_calls', 'Tool calls'],
  ['forward_tokens', 'Forward tokens'],
] as const satisfies readonly (readonly [keyof AttemptRow, string])[];

export function renderHtml(
  rows: readonly AttemptRow[],
  summary: readonly SummaryRow[],
  meta: ReportMeta,
  extras: ScoreboardExtras,
): string {
  const editors = [...new Set(summary.map((s) => s.editor))].sort();
  const colour = (editor: string) => PALETTE[editors.indexOf(editor) % PALETTE.length]!;
  const targets = unique(summary.map((s) => JSON.stringify([s.model_id, s.revision]))).map(
    (t) => JSON.parse(t) as [string, string],
  );
  const sections = targets.map(([model, revision]) => {
    const own = summary.filter((s) => s.model_id === model && s.revision === revision);
    const ownRows = rows.filter((r) => r.model_id === model && r.revision === revision);
    const families = unique(own.filter((s) => s.family !== ALL_FAMILIES).map((s) => s.family));
    const charts = CHARTS.map(({ metric, title, whiskers }) => {
      const caption = whiskers ? `${title} <small>(whiskers: 95 % bootstrap interval, where n &gt; 1)</small>` : title;
      return `<figure><figcaption>${caption}</figcaption>${chart(own, metric, whiskers, families, editors, colour)}</figure>`;
    });
    const caveat = model === TOY_MODEL_ID ? `<p class="caveat">${esc(TOY_CAVEAT)}</p>` : '';
    return `<section class="target"><h2>${esc(model)} <small>@ ${esc(revision)}</small></h2>${caveat}${legend(editors, colour)}
<div class="charts">${charts.join('')}</div>
<div class="charts">${scatter(ownRows, 'forward_tokens', 'Target forward tokens', (r) => r.forward_tokens, extras, colour)}${scatter(ownRows, 'editor_tokens', 'Editor tokens (input + output)', (r) => extras.editorTokens.get(r.results_json) ?? null, extras, colour)}</div>
<h3>Attempts (${ownRows.length})</h3>${attemptsTable(ownRows, extras.pages)}</section>`;
  });
  const versions = unique(
    rows.map((r) => `package ${r.package_version}, families ${r.family_version}, ${r.model_id} @ ${r.revision}`),
  );
  const body = `<h1>IWIBench report</h1>
<dl class="meta">
<dt>Generated</dt><dd>${esc(meta.generated_at)} by iwibench-ts ${esc(meta.package_version)}</dd>
<dt>Command</dt><dd><code>${esc(meta.command)}</code></dd>
<dt>Inputs</dt><dd>${meta.inputs.map((i) => `<code>${esc(i)}</code>`).join(', ')}</dd>
<dt>Results from</dt><dd>${versions.map(esc).join('<br>')}</dd>
<dt>Attempts</dt><dd>${rows.length}, by ${editors.length} editor(s): ${editors.map(esc).join(', ')}; each attempt's name opens its page (episode, transcript, patch, graded items)</dd>
<dt>Interval</dt><dd>95 % percentile bootstrap of the mean reward, ${BOOTSTRAP.resamples.toLocaleString('en')} resamples, seeded per group from "${esc(BOOTSTRAP.seed)}" (same results, same interval); not drawn for n = 1</dd>
</dl>
<details class="args"><summary>Arguments (${Object.keys(meta.args).length})</summary>${argsTable(meta.args)}</details>
<dl class="definitions">${Object.entries(DEFINITIONS)
    .map(([k, v]) => `<dt>${k}</dt><dd>${esc(v)}</dd>`)
    .join('')}</dl>
${sections.join('\n')}
<section><h2>Means by target, editor and family</h2>${summaryTable(summary)}</section>
${replaysSection(extras.replays)}
${efficiencySection(extras.efficiency)}`;
  return page('IWIBench report', body, CSS);
}

/** Grouped bars: one group per family, one bar per editor, each labelled with its value and n; whiskers where n > 1. */
function chart(
  summary: readonly SummaryRow[],
  metric: (typeof CHARTS)[number]['metric'],
  whiskers: boolean,
  families: string[],
  editors: string[],
  colour: (e: string) => string,
): string {
  const groupWidth = editors.length * (G.bar + G.barGap) - G.barGap;
  const width = G.left + families.length * (groupWidth + G.groupGap) + G.right;
  // Family names run downwards under their group, so they never overlap or leave the chart sideways.
  const bottom = 16 + G.charWidth * Math.max(0, ...families.map((f) => f.length));
  const height = G.top + G.plotHeight + bottom;
  const y = (v: number) => px(G.top + (1 - v) * G.plotHeight);
  const parts: string[] = [];
  parts.push(
    `<rect class="plot-area" x="${G.left}" y="${G.top}" width="${width - G.left - G.right}" height="${G.plotHeight}"/>`,
  );
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<line class="grid" x1="${G.left}" x2="${width - G.right}" y1="${y(tick)}" y2="${y(tick)}"/>`);
    parts.push(
      `<text class="tick" x="${G.left - 6}" y="${y(tick)}" dy="0.32em" text-anchor="end">${tick.toFixed(2)}</text>`,
    );
  }
  families.forEach((family, f) => {
    const x0 = G.left + G.groupGap / 2 + f * (groupWidth + G.groupGap);
    editors.forEach((editor, e) => {
      const s = summary.find((r) => r.family === family && r.editor === editor);
      if (!s) return; // this editor made no attempt in this family: an empty slot
      const value = s[metric];
      const x = x0 + e * (G.bar + G.barGap);
      const cx = px(x + G.bar / 2);
      const ids = `data-model-id="${esc(s.model_id)}" data-revision="${esc(s.revision)}" data-editor="${esc(editor)}" data-family="${esc(family)}"`;
      parts.push(
        `<rect class="bar" ${ids} data-metric="${metric}" data-value="${csvField(value)}" data-n="${s.n}" x="${x}" y="${y(value)}" width="${G.bar}" height="${px(value * G.plotHeight)}" fill="${colour(editor)}">` +
          `<title>${esc(editor)} · ${esc(family)}: ${metric} ${value.toFixed(3)} (n = ${s.n})</title></rect>`,
      );
      let labelTop = value;
      if (whiskers && s.n > 1) {
        parts.push(
          `<line class="ci" ${ids} data-metric="reward_ci95" data-low="${csvField(s.reward_ci95_low)}" data-high="${csvField(s.reward_ci95_high)}" x1="${cx}" x2="${cx}" y1="${y(s.reward_ci95_low)}" y2="${y(s.reward_ci95_high)}"/>`,
        );
        labelTop = Math.max(value, s.reward_ci95_high);
      }
      // The value label runs upwards from just above the bar (or its whisker): readable however narrow the bars.
      const ly = Number(y(labelTop)) - 4;
      parts.push(
        `<text class="value-label" ${ids} data-metric="${metric}" x="${cx}" y="${px(ly)}" dy="0.32em" transform="rotate(-90 ${cx} ${px(ly)})">${value.toFixed(2)} · n=${s.n}</text>`,
      );
    });
    const labelX = px(x0 + groupWidth / 2);
    const labelY = G.top + G.plotHeight + 8;
    parts.push(
      `<text class="family" x="${labelX}" y="${labelY}" dy="0.32em" transform="rotate(-90 ${labelX} ${labelY})" text-anchor="end">${esc(family)}</text>`,
    );
  });
  return `<svg class="chart" data-metric="${metric}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">${parts.join('')}</svg>`;
}

const S = { width: 420, height: 240, left: 48, right: 16, top: 12, bottom: 40 };

/** Reward against one resource, one point per attempt (a link to its page); null resources are left out and counted. */
function scatter(
  rows: readonly AttemptRow[],
  name: string,
  title: string,
  resource: (r: AttemptRow) => number | null,
  extras: ScoreboardExtras,
  colour: (e: string) => string,
): string {
  const known = rows.filter((r) => resource(r) !== null);
  const missing = rows.length - known.length;
  const note = missing ? ` <small>(${missing} attempt(s) without a record left out)</small>` : '';
  if (known.length === 0)
    return `<figure class="scatter" data-resource="${name}"><figcaption>Reward vs ${esc(title.toLowerCase())}</figcaption><p class="note">No attempt records ${esc(title.toLowerCase())}.</p></figure>`;
  const max = Math.max(...known.map((r) => resource(r)!));
  if (max === 0)
    return `<figure class="scatter" data-resource="${name}"><figcaption>Reward vs ${esc(title.toLowerCase())}${note}</figcaption><p class="note">Every attempt records 0 ${esc(title.toLowerCase())} (built-in or scripted editors call no model).</p></figure>`;
  const top = niceCeiling(max);
  const plotW = S.width - S.left - S.right,
    plotH = S.height - S.top - S.bottom;
  const x = (v: number) => px(S.left + (top === 0 ? 0 : v / top) * plotW);
  const y = (v: number) => px(S.top + (1 - v) * plotH);
  const parts = [`<rect class="plot-area" x="${S.left}" y="${S.top}" width="${plotW}" height="${plotH}"/>`];
  for (const tick of [0, 0.5, 1])
    parts.push(
      `<line class="grid" x1="${S.left}" x2="${S.left + plotW}" y1="${y(tick)}" y2="${y(tick)}"/><text class="tick" x="${S.left - 6}" y="${y(tick)}" dy="0.32em" text-anchor="end">${tick.toFixed(1)}</text>`,
    );
  for (const tick of [0, top / 2, top])
    parts.push(
      `<text class="tick" x="${x(tick)}" y="${S.top + plotH + 14}" text-anchor="middle">${esc(shortNumber(tick))}</text>`,
    );
  parts.push(
    `<text class="axis" x="${S.left + plotW / 2}" y="${S.height - 6}" text-anchor="middle">${esc(title)}</text>`,
  );
  parts.push(
    `<text class="axis" x="12" y="${S.top + plotH / 2}" transform="rotate(-90 12 ${S.top + plotH / 2})" text-anchor="middle">reward</text>`,
  );
  for (const r of known) {
    const v = resource(r)!;
    const dot = `<circle class="point" data-attempt="${esc(r.attempt)}" data-reward="${csvField(r.reward)}" data-resource="${csvField(v)}" cx="${x(v)}" cy="${y(r.reward)}" r="4" fill="${colour(r.editor)}"><title>${esc(r.attempt)} (${esc(r.editor)}): reward ${r.reward.toFixed(3)}, ${esc(title.toLowerCase())} ${v.toLocaleString('en')}</title></circle>`;
    const href = extras.pages.get(r.results_json);
    parts.push(href ? `<a href="${esc(href)}">${dot}</a>` : dot);
  }
  return `<figure class="scatter" data-resource="${name}"><figcaption>Reward vs ${esc(title.toLowerCase())}${note}</figcaption><svg class="scatter" width="${S.width}" height="${S.height}" viewBox="0 0 ${S.width} ${S.height}" role="img">${parts.join('')}</svg></figure>`;
}

/** 1, 2 or 5 times a power of ten, at least `v`. */
function niceCeiling(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((c) => c >= v)!;
}

const shortNumber = (v: number): string =>
  v >= 1e6 ? `${+(v / 1e6).toPrecision(3)}M` : v >= 1e3 ? `${+(v / 1e3).toPrecision(3)}k` : String(+v.toPrecision(3));

function legend(editors: string[], colour: (e: string) => string): string {
  return `<p class="legend">${editors.map((e) => `<span><i style="background:${colour(e)}"></i>${esc(e)}</span>`).join('')}</p>`;
}

/** A numeric or text cell with its exact CSV value in data-value. */
function cell(column: string, v: unknown): string {
  if (typeof v !== 'number')
    return `<td data-column="${column}" data-text="${esc(v === null || v === undefined ? '' : String(v))}">${breakable(v === null || v === undefined ? '' : String(v))}</td>`;
  return `<td class="num" data-column="${column}" data-value="${csvField(v)}">${Number.isInteger(v) ? v.toLocaleString('en') : v.toFixed(3)}</td>`;
}

function attemptsTable(rows: readonly AttemptRow[], pages: ReadonlyMap<string, string>): string {
  const numeric = new Set([
    'seed',
    'reward',
    'gain',
    'target_success_base',
    'target_success_edited',
    'retention_overall',
    'retention_general_controls',
    'retention_spillover',
    'retention_overrides',
    'patch_ops',
    'changed_parameters',
    'max_relative_delta',
    'tool_calls',
    'forward_tokens',
  ]);
  const head = SHOWN_COLUMNS.map(
    ([c, title]) => `<th class="${numeric.has(c) ? 'num' : ''}" title="${c}">${esc(title)}</th>`,
  ).join('');
  const body = rows.map((r) => {
    const href = pages.get(r.results_json);
    const cells = SHOWN_COLUMNS.map(([c]) => {
      if (c !== 'attempt') return cell(c, r[c]);
      const name = href
        ? `<a class="attempt-link" href="${esc(href)}">${breakable(r.attempt)}</a>`
        : breakable(r.attempt);
      return `<td data-column="attempt" data-text="${esc(r.attempt)}">${name}</td>`;
    });
    return `<tr data-results-json="${esc(r.results_json)}">${cells.join('')}</tr>`;
  });
  return `<table class="attempts"><thead><tr>${head}</tr></thead><tbody>${body.join('\n')}</tbody></table>
<p class="note">Target base and edited: share of target items passed by the pristine and the patched model. Controls, spillover and overrides: the parts of retention (empty: no base-correct item, not measured). Every column, with revision, versions and file paths, is in <code>results.csv</code>.</p>`;
}

function summaryTable(summary: readonly SummaryRow[]): string {
  const head = SUMMARY_COLUMNS.map((c) => `<th>${esc(c)}</th>`).join('');
  const body = summary.map((s) => `<tr>${SUMMARY_COLUMNS.map((c) => cell(c, s[c])).join('')}</tr>`);
  return `<table class="summary"><thead><tr>${head}</tr></thead><tbody>${body.join('\n')}</tbody></table>`;
}

function replaysSection(replays: readonly ReplayRow[]): string {
  if (replays.length === 0) return '';
  const rate = (p: ReplayRow['new_controls']) =>
    `${num(p.retention)} <span class="note">(${p.retained}/${p.base_correct})</span>`;
  const rows = replays.map(
    (
      r,
    ) => `<tr class="replay"><td>${r.original_page ? `<a href="${esc(r.original_page)}">${esc(r.family)} s${r.seed}</a>` : `${esc(r.family)} s${r.seed}`}<br><span class="note">${breakable(r.original)}</span></td>
<td>${breakable(r.editor)}</td>
<td class="num">${r.original_control_seed} → ${r.control_seed}</td>
<td class="num" data-column="original_reward" data-value="${csvField(r.original_reward)}">${num(r.original_reward)}</td>
<td class="num" data-column="reward" data-value="${csvField(r.reward)}">${num(r.reward)}</td>
<td class="num" data-column="new_controls">${rate(r.new_controls)}</td><td class="num" data-column="repeated_controls">${rate(r.repeated_controls)}</td></tr>`,
  );
  return `<section id="replays"><h2>Replays with new controls (${replays.length})</h2>
<p class="note">The same patch and target questions with another control seed (<code>replay-patch</code>); the original controls are run again too. Retention on the new controls next to the repeated ones shows whether a patch fits the controls it was scored on.</p>
<table class="replays"><thead><tr><th>Attempt replayed</th><th>Editor</th><th class="num">Control seed</th><th class="num">Reward (original)</th>
<th class="num">Reward (replay)</th><th class="num">Retention, new controls</th><th class="num">Retention, repeated controls</th></tr></thead>
<tbody>${rows.join('')}</tbody></table></section>`;
}

function efficiencySection(efficiency: ScoreboardExtras['efficiency']): string {
  if (efficiency.length === 0) return '';
  const rows: string[] = [];
  const notes: string[] = [];
  for (const e of efficiency) {
    if (e.note) notes.push(`${e.editor}: ${e.note}`);
    if (!e.rows) continue;
    for (const r of e.rows) {
      rows.push(`<tr class="${r.scope === 'all' ? 'all' : ''}"><td>${breakable(r.editor)}</td><td>${breakable(r.model_id)}</td><td>${breakable(r.family)}</td>
<td class="num">${r.n}</td><td class="num">${num(r.editor_requests)}</td>
<td class="num">${num(r.editor_tokens)}</td><td class="num">${num(r.cached_input_tokens)}</td><td class="num">${num(r.reasoning_tokens)}</td>
<td class="num">${num(r.mean_reward)}</td>
<td class="num" data-column="reward_per_1k_editor_tokens" data-value="${csvField(r.reward_per_1k_editor_tokens)}">${num(r.reward_per_1k_editor_tokens, 4)}</td>
<td class="num">${num(r.target_forward_tokens)}</td></tr>`);
    }
  }
  return `<section id="token-efficiency"><h2>Token efficiency</h2>
<p class="note">Editor tokens from each attempt's trace.jsonl: input (cached included) + output (reasoning included); reward per 1,000 editor tokens = 1000 · Σ reward / Σ editor tokens (as <code>report-token-efficiency</code>). Target forward tokens are a different resource, never added.</p>
${
  rows.length
    ? `<table class="efficiency"><thead><tr><th>Editor</th><th>Target</th><th>Family</th><th class="num">n</th><th class="num">Requests</th>
<th class="num">Editor tokens</th><th class="num">Cached input</th><th class="num">Reasoning</th><th class="num">Mean reward</th>
<th class="num">Reward / 1k editor tokens</th><th class="num">Forward tokens</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
    : ''
}
${notes.length ? `<ul class="note">${notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : ''}</section>`;
}

/** Escaped text that may break after an underscore, slash, colon or dot (ids, family names, paths), and nowhere else. */
const breakable = (text: string): string => esc(text).replace(/([_/:.])/g, '$1<wbr>');

const unique = (values: string[]): string[] => [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const CSS = `
.charts { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 8px; }
figure { margin: 0; max-width: 100%; } figcaption { font-weight: 600; margin-bottom: 4px; } figcaption small { font-weight: normal; color: #666; }
svg.chart, svg.scatter { max-width: 100%; height: auto; }
.plot-area { fill: #fafafa; stroke: #ccc; } .grid { stroke: #e4e4e4; } .ci { stroke: #222; stroke-width: 1.5; }
.tick, .family, .axis { font-size: 11px; fill: #444; } .value-label { font-size: 10px; fill: #222; }
.point { stroke: #fff; stroke-width: 1; fill-opacity: 0.85; }
.legend span { margin-right: 16px; } .legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
dl.definitions { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; background: #f5f8fc; border: 1px solid #d6e2f0; padding: 6px 10px; border-radius: 3px; }
dl.definitions dt { font-weight: 600; } dl.definitions dd { margin: 0; }
details.args { margin: 8px 0; } details.args summary { cursor: pointer; font-weight: 600; }
table.attempts, table.summary { width: 100%; } table.attempts :is(td, th), table.summary :is(td, th), table.replays td, table.efficiency td { overflow-wrap: normal; }
table.attempts td[data-column=attempt] { min-width: 150px; } table.attempts thead th.num { white-space: normal; }
table.attempts th, table.summary th { font-size: 11px; } tr.all td { font-weight: 600; }
`;
