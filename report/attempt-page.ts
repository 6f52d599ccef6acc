// One attempt's page: the episode the editor was given, what it spent and why it stopped, the patch it submitted,
// every graded item with pristine and patched output, and its transcript. Self-contained like the scoreboard (no
// script, no network); everything from the run is escaped. A page stays under PAGE_LIMIT: long values are
// summarised one by one, and when the transcript alone would pass its share, later tool calls are listed in one
// line each (name, outcome, budget left) and the page says so.
import { formatSlice, resolveSlice, type SliceSpec } from '../service/weights/index.ts';
import type { ItemResult, ResultsFile, EditorUsage } from '../taskset/index.ts';
import type { AttemptFiles, PatchView } from './attempt-folder.ts';
import type { TraceEntry } from './trace-file.ts';
import { attemptUsage } from './token-efficiency.ts';
import type { ReplayRow } from './html.ts';
import { isObject } from './trace-file.ts';
import {
  TOY_CAVEAT,
  TOY_MODEL_ID,
  argsTable,
  cutText,
  diffWords,
  esc,
  foldedPre,
  num,
  page,
  share,
  summariseJson,
  summariseText,
} from './html-kit.ts';

/** Every page stays below 2 MB, so a browser opens it at once; the transcript gets what the rest leaves of
 * TRANSCRIPT_SHARE. */
export const PAGE_LIMIT = 2_000_000;
const TRANSCRIPT_SHARE = 1_300_000;

export type AttemptPageInput = {
  results: ResultsFile;
  editor: string;
  attempt: string;
  resultsFile: string;
  folder: AttemptFiles;
  /** Replays of this attempt's patch with other control seeds. */
  replays: readonly ReplayRow[];
  /** The scoreboard, relative to this page. */
  back: string;
};

const KIND_ORDER = ['target', 'preservation', 'override', 'control'] as const;
const KIND_TITLES: Record<string, string> = {
  target: 'Target items (make the gain)',
  preservation: 'Preservation items (nearby facts: spillover)',
  override: 'Override items (explicit instructions)',
  control: 'General controls',
};

export function renderAttemptPage(input: AttemptPageInput): string {
  const { results, folder } = input;
  const { episode, versions } = results;
  const brief = briefOf(folder);
  const title = `${episode.family} seed ${episode.seed} · ${input.editor}`;
  const sections = [
    header(input, title),
    episodeSection(results, brief),
    resourceSection(results, folder),
    patchSection(results, folder),
    itemsSection(results),
  ];
  const used = sections.reduce((s, x) => s + x.length, 0);
  sections.push(transcriptSection(folder, Math.max(0, TRANSCRIPT_SHARE - used)));
  if (sections.reduce((s, x) => s + x.length, 0) > PAGE_LIMIT - 100_000)
    sections[sections.length - 1] = transcriptSection(folder, 0);
  const toc = `<nav class="toc"><a href="#episode">Episode</a> · <a href="#resources">Resources</a> · <a href="#patch">Patch</a> · <a href="#items">Graded items (${results.items.length})</a> · <a href="#transcript">Transcript</a></nav>`;
  const caveat = versions.model_id === TOY_MODEL_ID ? `<p class="caveat">${esc(TOY_CAVEAT)}</p>` : '';
  const problems = folder.problems.length
    ? `<div class="warn"><b>Could not read everything:</b><ul>${folder.problems.map((p) => `<li>${esc(p)}</li>`).join('')}</ul></div>`
    : '';
  return page(`IWIBench · ${title}`, [sections[0], caveat, problems, toc, ...sections.slice(1)].join('\n'), CSS);
}

function header(input: AttemptPageInput, title: string): string {
  const { score, versions, created_at } = input.results;
  const r = score.retention;
  return `<p><a href="${esc(input.back)}">← scoreboard</a></p>
<h1>${esc(title)} <small>${esc(input.attempt)}</small></h1>
<p class="note">${esc(versions.model_id)} @ ${esc(versions.revision)} · package ${esc(versions.package)} · families ${esc(versions.family_version)} · evaluated ${esc(created_at)} · <code>${esc(input.resultsFile)}</code></p>
<div class="scores" id="score">
<div><b data-metric="reward" data-value="${score.reward}">${num(score.reward)}</b><span>reward</span><small>= gain × retention</small></div>
<div><b data-metric="gain" data-value="${score.gain}">${num(score.gain)}</b><span>gain</span><small>max(0, (edited − base) / (1 − base)) of target success: ${num(score.targetSuccess.base)} → ${num(score.targetSuccess.edited)}</small></div>
<div><b data-metric="retention" data-value="${r.overall}">${num(r.overall)}</b><span>retention</span><small>base-correct retention items still correct: ${r.counts.all.retained}/${r.counts.all.baseCorrect}</small></div>
<div><b>${num(r.generalControls)}</b><span>general controls</span><small>${r.counts.generalControls.retained}/${r.counts.generalControls.baseCorrect} kept</small></div>
<div><b>${num(r.spillover)}</b><span>spillover (preservation)</span><small>${r.counts.preservation.retained}/${r.counts.preservation.baseCorrect} kept; 1 = none</small></div>
<div><b>${num(r.overrides)}</b><span>overrides</span><small>${r.counts.overrides.retained}/${r.counts.overrides.baseCorrect} kept</small></div>
</div>
${score.notes.length ? `<p class="note">Score notes: ${score.notes.map(esc).join('; ')}</p>` : ''}
${input.replays.map(replayLine).join('')}`;
}

function replayLine(r: ReplayRow): string {
  const part = (p: ReplayRow['new_controls']) => `${num(p.retention)} (${p.retained}/${p.base_correct})`;
  return `<p class="replay-line"><b>Replayed</b> with control seed ${r.control_seed} (this attempt: ${r.original_control_seed}): reward ${num(r.reward)} against ${num(r.original_reward)}; retention on the new controls ${part(r.new_controls)}, on the repeated ones ${part(r.repeated_controls)} <span class="note">${esc(r.results_json)}</span></p>`;
}

type Brief = { objective?: unknown; practice?: unknown; budget?: unknown; relevant_tokens?: unknown; target?: unknown };

function briefOf(folder: AttemptFiles): Brief | undefined {
  const brief = folder.trace?.entries.find((e) => e.type === 'brief')?.brief;
  return isObject(brief) ? brief : undefined;
}

function episodeSection(results: ResultsFile, brief: Brief | undefined): string {
  const { episode, editor, args } = results;
  const objective = isObject(brief?.objective) ? brief.objective : undefined;
  const objectiveText = typeof objective?.text === 'string' ? objective.text : undefined;
  const practice = Array.isArray(brief?.practice) ? brief.practice.filter(isObject) : [];
  const tokens = Array.isArray(brief?.relevant_tokens) ? brief.relevant_tokens.filter(isObject) : [];
  const practiceRows = practice.map(
    (p, i) =>
      `<tr><td class="num">${i + 1}</td><td>${messagesText(p.messages)}</td><td>${esc(String(p.response ?? ''))}</td>
<td>${esc(String(p.note ?? ''))}</td></tr>`,
  );
  return `<section id="episode"><h2>Episode</h2>
<dl class="meta">
<dt>Family</dt><dd>${esc(episode.family)}</dd>
<dt>Seed</dt><dd>${episode.seed} (control seed ${episode.control_seed}; parameters ${esc(episode.params_key)})</dd>
<dt>Editor</dt><dd>${esc(editor?.label ?? '(unlabelled)')}${editor?.model ? ` · model <code>${esc(editor.model)}</code>` : ''}</dd>
<dt>Objective</dt><dd class="objective">${objectiveText !== undefined ? esc(objectiveText) : '<span class="note">not recorded (no trace.jsonl with a brief)</span>'}</dd>
${objective?.structured !== undefined ? `<dt>Structured</dt><dd>${foldedPre(summariseJson(objective.structured), 'structured objective')}</dd>` : ''}
${tokens.length ? `<dt>Relevant tokens</dt><dd>${tokens.map((t) => `<code>${esc(String(t.id))}: ${esc(JSON.stringify(t.token))}</code>`).join(' ')}</dd>` : ''}
${brief?.budget !== undefined ? `<dt>Budgets</dt><dd>${budgetLine(isObject(brief.budget) && isObject(brief.budget.limits) ? brief.budget.limits : brief.budget)}</dd>` : ''}
</dl>
<h3>Practice examples the editor saw (${practice.length})</h3>
${
  practice.length
    ? `<table class="practice"><thead><tr><th class="num">#</th><th>Prompt</th><th>Requested response</th><th>Note</th></tr></thead>
<tbody>${practiceRows.join('')}</tbody></table>`
    : '<p class="note">none recorded</p>'
}
<h3>Arguments of the run</h3>${argsTable(args)}
</section>`;
}

/** Chat messages as text: a lone user message as it is, several with their roles. */
function messagesText(messages: unknown): string {
  if (!Array.isArray(messages)) return esc(JSON.stringify(messages ?? null));
  const list = messages.filter(isObject);
  if (list.length === 1 && list[0]!.role === 'user') return esc(String(list[0]!.content ?? ''));
  return list.map((m) => `<b>${esc(String(m.role))}:</b> ${esc(String(m.content ?? ''))}`).join('<br>');
}

function budgetLine(budget: unknown): string {
  if (!isObject(budget)) return esc(JSON.stringify(budget));
  return Object.entries(budget)
    .map(
      ([k, v]) =>
        `<span class="budget-item">${esc(k.replaceAll('_', ' '))} <b>${typeof v === 'number' ? num(v) : esc(String(v))}</b></span>`,
    )
    .join(' ');
}

function resourceSection(results: ResultsFile, folder: AttemptFiles): string {
  const tools = folder.trace?.entries.filter((e) => e.type === 'tool') ?? [];
  const byName = new Map<string, { calls: number; errors: number; refused: number; ms: number }>();
  for (const t of tools) {
    const name = String(t.name);
    const entry = byName.get(name) ?? { calls: 0, errors: 0, refused: 0, ms: 0 };
    entry.calls++;
    if (t.ok === false) entry.errors++;
    if (t.refused_budget !== undefined) entry.refused++;
    entry.ms += Number(t.duration_ms) || 0;
    byName.set(name, entry);
  }
  const usage = attemptUsage(folder.trace, results);
  const res = results.resources;
  const ej = folder.editorJson;
  const stop = String(
    folder.attemptJson?.stop_reason ??
      ej?.stop_reason ??
      folder.trace?.entries.find((e) => e.type === 'stop')?.reason ??
      'not recorded',
  );
  const stopError = ej?.error ?? folder.trace?.entries.find((e) => e.type === 'stop')?.error;
  const toolRows = [...byName.entries()].map(
    ([name, t]) => `<tr><td>${esc(name)}</td><td class="num">${t.calls}</td><td class="num">${t.errors}</td>
<td class="num">${t.refused}</td><td class="num">${num(t.ms)} ms</td></tr>`,
  );
  return `<section id="resources"><h2>Resources and stop reason</h2>
<dl class="meta">
<dt>Stop reason</dt><dd><b class="stop-reason">${esc(stop)}</b>${stopError !== undefined ? ` — ${esc(String(stopError))}` : ''}</dd>
<dt>Turns</dt><dd>${num(res?.turns)}</dd>
<dt>Tool calls</dt><dd>${num(res?.tool_calls)}${tools.length ? ` (${tools.filter((t) => t.ok === false).length} answered with an error)` : ''}</dd>
<dt>Target forward tokens</dt><dd>${num(res?.forward_tokens)} (run_target sequences ${num(res?.run_target_sequence_evaluations)}, inspect_target sequences ${num(res?.inspect_target_sequence_evaluations)})</dd>
<dt>Editor tokens</dt><dd>${editorTokens(usage)}</dd>
<dt>Editor wall time</dt><dd>${typeof ej?.duration_ms === 'number' ? `${num(ej.duration_ms / 1000, 1)} s` : 'not recorded'}</dd>
<dt>Evaluation</dt><dd>pristine ${num(results.evaluation.pristine_seconds, 1)} s, patched ${num(results.evaluation.edited_seconds, 1)} s, ${num(results.evaluation.forward_tokens)} forward tokens (fresh processes, ${esc(results.evaluation.precision ?? 'float32')} precision on ${esc(results.evaluation.device ?? 'cpu')}; arithmetic ${esc(results.evaluation.arithmetic ?? 'unnamed')}${results.evaluation.kernel ? `, ${esc(results.evaluation.kernel)} path` : ''})</dd>
</dl>
${
  toolRows.length
    ? `<table class="tools"><thead><tr><th>Tool</th><th class="num">Calls</th><th class="num">Errors</th><th class="num">Refused by a budget</th><th class="num">Time</th></tr></thead>
<tbody>${toolRows.join('')}</tbody></table>`
    : ''
}
</section>`;
}

/** The editor's tokens and requests, counted as report-token-efficiency counts them (attemptUsage). */
function editorTokens(usage: EditorUsage | Error | null): string {
  if (usage === null) return 'not recorded';
  if (usage instanceof Error) return `not counted: ${esc(usage.message)}`;
  // results.json written before failed requests were counted has no failed_requests.
  const failed = usage.failed_requests ?? 0;
  return `${num(usage.input_tokens + usage.output_tokens)} = input ${num(usage.input_tokens)} (cached ${num(usage.cached_input_tokens)}) + output ${num(usage.output_tokens)} (reasoning ${num(usage.reasoning_tokens)}), ${num(usage.requests)} requests${failed > 0 ? ` (${num(failed)} answered with an error)` : ''}`;
}

// -- patch ------------------------------------------------------------------------------------------------------

function patchSection(results: ResultsFile, folder: AttemptFiles): string {
  const patch = folder.patch;
  if (!results.patch || !patch)
    return `<section id="patch"><h2>Patch</h2><p>No patch: the pristine weights were evaluated.</p></section>`;
  const opRows = patch.ops.map((op, i) => opRow(op, i, patch, folder.tensorShapes));
  const tensorNames = Object.keys(patch.stats.tensors);
  const tensorRows = tensorNames.map((name) => {
    const s = patch.stats.tensors[name]!;
    const shape = folder.tensorShapes.get(name);
    const ops = patch.ops.map((op, i) => [op, i] as const).filter(([op]) => op.tensor === name);
    return `<tr data-tensor="${esc(name)}"><td><code>${esc(name)}</code>${shape ? `<br><span class="note">[${shape.join(' × ')}]</span>` : ''}</td>
<td class="num">${num(s.changed ?? null)}${
      shape
        ? `<br><span class="note">${share(
            s.changed ?? 0,
            shape.reduce((a, b) => a * b, 1),
          )}</span>`
        : ''
    }</td>
<td class="num">${num(s.delta_frobenius ?? null, 4)}</td><td class="num">${num(s.relative_delta ?? null, 4)}</td>
<td class="strips">${heatStrips(
      shape,
      ops.map(([op]) => op),
      name,
    )}<span class="note">ops ${ops.map(([, i]) => i).join(', ') || '—'}</span></td></tr>`;
  });
  const createdBy = patch.createdBy
    ? `<dt>Created by</dt><dd>${esc(
        Object.entries(patch.createdBy)
          .map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(', '),
      )}</dd>`
    : '';
  return `<section id="patch"><h2>Patch</h2>
<dl class="meta">
<dt>Id</dt><dd><code class="patch-id">${esc(results.patch.sha256)}</code> (SHA-256 of the patch folder: <code>${esc(results.versions.model_id)}+patch:${esc(results.patch.sha256.slice(0, 12))}…</code>)</dd>
<dt>Ops</dt><dd>${results.patch.ops}, changing ${num(results.patch.changed_parameters)} BF16 parameters in ${tensorNames.length} tensor(s)</dd>
${createdBy}
<dt>Folder</dt><dd><code>${esc(patch.file ?? results.patch.dir)}</code></dd>
</dl>
<h3>Ops, in the order they apply</h3>
${
  opRows.length
    ? `<table class="ops"><thead><tr><th class="num">#</th><th>Kind</th><th>Tensor</th><th>Slice</th><th>Selection</th><th>Parameters</th>
<th>Operands</th></tr></thead><tbody>${opRows.join('')}</tbody></table>`
    : '<p class="note">no ops listed (patch.json not found)</p>'
}
<h3>Touched tensors (net change against pristine)</h3>
<table class="tensors"><thead><tr><th>Tensor</th><th class="num">Changed</th><th class="num">‖ΔW‖<sub>F</sub></th>
<th class="num">‖ΔW‖<sub>F</sub> / ‖W‖<sub>F</sub></th><th>Where the ops write (darker: more of the band covered)</th></tr></thead>
<tbody>${tensorRows.join('')}</tbody></table>
</section>`;
}

function opRow(op: Record<string, unknown>, index: number, patch: PatchView, shapes: Map<string, number[]>): string {
  const tensor = String(op.tensor ?? '?');
  const slice = Array.isArray(op.slice) ? (op.slice as SliceSpec) : [];
  const selection = selectionShape(slice, shapes.get(tensor), tensor);
  const params: string[] = [];
  const operands: string[] = [];
  for (const [key, value] of Object.entries(op)) {
    if (key === 'op' || key === 'tensor' || key === 'slice') continue;
    if (isObject(value) && typeof value.array === 'string') {
      const shape = patch.operandShapes.get(value.array);
      operands.push(
        `${esc(key)} ${shape ? `[${shape.join(' × ')}] = ${num(shape.reduce((a, b) => a * b, 1))} numbers` : `<code>${esc(value.array)}</code>`}`,
      );
    } else if (key === 'source' && isObject(value)) {
      params.push(
        `source <code>${esc(String(value.tensor))}</code> ${esc(formatSlice(Array.isArray(value.slice) ? (value.slice as SliceSpec) : []))}`,
      );
    } else params.push(`${esc(key)} ${esc(typeof value === 'number' ? String(value) : JSON.stringify(value))}`);
  }
  const u = isObject(op.u) ? patch.operandShapes.get(String(op.u.array)) : undefined;
  if (op.op === 'low_rank_add' && u) params.push(`rank ${u[u.length - 1]}`);
  return `<tr class="op" data-op-index="${index}" data-op="${esc(String(op.op))}" data-tensor="${esc(tensor)}"><td class="num">${index}</td>
<td><b>${esc(String(op.op))}</b></td><td><code>${esc(tensor)}</code></td><td><code>${esc(formatSlice(slice))}</code></td><td>${selection}</td>
<td>${params.join('<br>') || '—'}</td><td>${operands.join('<br>') || 'inline'}</td></tr>`;
}

function selectionShape(slice: SliceSpec, shape: number[] | undefined, tensor: string): string {
  if (!shape) return '<span class="note">tensor shape unknown</span>';
  try {
    const s = resolveSlice(slice, shape, tensor);
    return `[${s.shape.join(' × ')}] = ${num(s.numel)} of ${num(shape.reduce((a, b) => a * b, 1))}`;
  } catch (error) {
    return `<span class="fail">${esc((error as Error).message)}</span>`;
  }
}

const STRIP_BINS = 128;

/**
 * Heat strips of the rows and the columns (the first two dimensions) that the ops' selections cover: each cell is
 * a band of rows or columns, its darkness the share of the band that some op writes.
 */
function heatStrips(shape: number[] | undefined, ops: Record<string, unknown>[], tensor: string): string {
  if (!shape || shape.length === 0 || ops.length === 0) return '';
  const axes = shape.slice(0, 2).map((n) => new Uint8Array(n));
  for (const op of ops) {
    let selection;
    try {
      selection = resolveSlice(Array.isArray(op.slice) ? op.slice : [], shape, tensor);
    } catch {
      continue;
    }
    axes.forEach((covered, d) => {
      const dim = selection.dims[d]!;
      for (let k = 0; k < dim.count; k++) covered[dim.start + k * dim.step] = 1;
    });
  }
  const names = shape.length === 1 ? ['elements'] : ['rows', 'columns'];
  return axes
    .map((covered, d) => {
      const n = covered.length;
      const bins = Math.min(n, STRIP_BINS);
      const cells: string[] = [];
      let touched = 0;
      for (let b = 0; b < bins; b++) {
        const lo = Math.floor((b * n) / bins),
          hi = Math.floor(((b + 1) * n) / bins);
        let c = 0;
        for (let i = lo; i < hi; i++) c += covered[i]!;
        touched += c;
        if (c > 0)
          cells.push(
            `<rect x="${b}" y="0" width="1" height="1" fill-opacity="${(0.15 + (0.85 * c) / (hi - lo)).toFixed(2)}"><title>${names[d]} ${lo}–${hi - 1}: ${c} of ${hi - lo}</title></rect>`,
          );
      }
      return `<div class="strip"><span>${names[d]} ${touched}/${n}</span><svg class="heat" data-axis="${names[d]}" data-touched="${touched}" viewBox="0 0 ${bins} 1" preserveAspectRatio="none" role="img"><rect class="bg" x="0" y="0" width="${bins}" height="1"/>${cells.join('')}</svg></div>`;
    })
    .join('');
}

// -- graded items -----------------------------------------------------------------------------------------------

function itemsSection(results: ResultsFile): string {
  const { score } = results;
  const counts = score.retention.counts;
  const parts = KIND_ORDER.map((kind) => {
    const items = results.items.filter((i) => i.kind === kind);
    if (items.length === 0) return '';
    const basePassed = items.filter((i) => i.base.passed).length;
    const editedPassed = items.filter((i) => i.edited.passed).length;
    const summary =
      kind === 'target'
        ? `pristine passes ${basePassed}/${items.length}, patched ${editedPassed}/${items.length}: target success ${num(score.targetSuccess.base)} → ${num(score.targetSuccess.edited)}, gain ${num(score.gain)}`
        : (() => {
            const c =
              kind === 'control'
                ? counts.generalControls
                : kind === 'preservation'
                  ? counts.preservation
                  : counts.overrides;
            const rate =
              kind === 'control'
                ? score.retention.generalControls
                : kind === 'preservation'
                  ? score.retention.spillover
                  : score.retention.overrides;
            return `base-correct ${c.baseCorrect}/${c.total}, still correct after the patch ${c.retained}: retention ${num(rate)}${rate === null ? ' (not measured)' : ''}`;
          })();
    return `<h3 id="items-${kind}">${esc(KIND_TITLES[kind]!)} · ${items.length}</h3><p class="counts" data-kind="${kind}">${esc(summary)}</p>
<table class="items"><thead><tr><th>Item</th><th>Prompt</th><th>Pristine output</th><th>Patched output (changes marked)</th><th>Verdict</th></tr></thead>
<tbody>${items.map(itemRow).join('')}</tbody></table>`;
  });
  const other = results.items.filter((i) => !(KIND_ORDER as readonly string[]).includes(i.kind));
  if (other.length)
    parts.push(
      `<h3>Other items · ${other.length}</h3><table class="items"><tbody>${other.map(itemRow).join('')}</tbody></table>`,
    );
  return `<section id="items"><h2>Graded items</h2>
<p class="note">Overall retention ${num(score.retention.overall)}: of ${counts.all.baseCorrect} retention items (controls, preservation, overrides) the pristine model got right, the patched model still gets ${counts.all.retained} right. An item passes when its check finds both the behaviour and the content.</p>
${results.items.length === 0 ? '<p class="note">results.json lists no items.</p>' : parts.join('\n')}</section>`;
}

/** Longer outputs than any graded item's token cap gives are cut (a page stays small whatever results.json holds). */
const OUTPUT_LIMIT = 3_000;

function itemRow(item: ItemResult): string {
  const diff = diffWords(cutText(item.base.output, OUTPUT_LIMIT).text, cutText(item.edited.output, OUTPUT_LIMIT).text);
  const change =
    item.kind === 'target'
      ? item.edited.passed
        ? item.base.passed
          ? 'passes (already did)'
          : 'gained'
        : item.base.passed
          ? 'lost'
          : 'still fails'
      : item.base.passed
        ? item.edited.passed
          ? 'kept'
          : 'lost'
        : 'not counted (pristine fails)';
  const changeClass =
    change === 'gained' || change === 'kept' || change.startsWith('passes')
      ? 'pass'
      : change === 'lost' || change === 'still fails'
        ? 'fail'
        : 'note';
  const verdict = (v: ItemResult['base']) =>
    `<span class="${v.passed ? 'pass' : 'fail'}">${v.passed ? 'pass' : 'fail'}</span> <span class="note">${v.verdict.behaviour ? 'behaviour ✓' : 'behaviour ✗'} ${v.verdict.content ? 'content ✓' : 'content ✗'}</span>`;
  return `<tr class="item" data-item="${esc(item.id)}" data-kind="${esc(item.kind)}" data-base-passed="${item.base.passed}" data-edited-passed="${item.edited.passed}">
<td><code>${esc(item.id)}</code></td><td>${messagesText(item.messages)}</td>
<td><div class="out">${diff.before}</div>${verdict(item.base)}<div class="detail">${esc(item.base.verdict.detail)}</div></td>
<td><div class="out">${diff.after}</div>${diff.same ? '<span class="note">(same text)</span> ' : ''}${verdict(item.edited)}<div class="detail">${esc(item.edited.verdict.detail)}</div></td>
<td class="${changeClass}">${esc(change)}</td></tr>`;
}

// -- transcript -------------------------------------------------------------------------------------------------

/** The trace in order: messages sent, replies with usage and timing, each tool call with arguments, result and budget. */
function transcriptSection(folder: AttemptFiles, budget: number): string {
  if (!folder.trace)
    return `<section id="transcript"><h2>Transcript</h2><p class="note">No trace.jsonl in this folder (a bare evaluation of a patch).</p></section>`;
  const out: string[] = [];
  let size = 0;
  let compact = 0;
  const seen = { chat: 0, responses: 0 };
  const tools = folder.trace.entries.filter((e) => e.type === 'tool').length;
  for (const e of folder.trace.entries) {
    let html = entryHtml(e, seen); // also when not shown: it keeps track of the messages seen
    if (COMPACT_TYPES.has(e.type) && (compact > 0 || size + html.length > budget)) {
      compact++; // from the first one over the share on, every request, reply and tool call is one line
      html = compactLine(e);
    }
    size += html.length;
    out.push(html);
  }
  const finalReply = folder.editorJson?.final_reply;
  const note = compact
    ? `<p class="warn folded-note">${compact} requests, replies and tool calls are listed in one line each (tool calls: name, outcome, budget left): shown in full, this page would pass ${(PAGE_LIMIT / 1e6).toFixed(0)} MB. Every one is in full in <code>${esc(folder.trace.file)}</code>.</p>`
    : '';
  return `<section id="transcript"><h2>Transcript <small>${folder.trace.entries.length} trace lines, ${tools} tool calls</small></h2>
<p class="note">From <code>${esc(folder.trace.file)}</code>. Long values are cut and arrays of numbers summarised (count, min, max, mean, norm, first values); the trace keeps them whole.</p>
${note}
${typeof finalReply === 'string' ? `<div class="final"><b>Final reply</b><pre>${esc(finalReply)}</pre></div>` : ''}
<ol class="transcript">${out.join('\n')}</ol></section>`;
}

function entryHtml(e: TraceEntry, seen: { chat: number; responses: number }): string {
  const time = typeof e.time === 'string' ? `<time>${esc(e.time.slice(11, 23))}</time>` : '';
  switch (e.type) {
    case 'brief':
      return `<li class="ev brief">${time}<b>Brief received</b> (objective, manifest, practice, budgets: above under Episode)</li>`;
    case 'turn':
      return `<li class="ev turn" id="turn-${esc(String(e.turn))}">${time}<h3>Turn ${esc(String(e.turn))}</h3></li>`;
    case 'request':
      return requestHtml(e, seen, time);
    case 'response':
      return responseHtml(e, time);
    case 'error':
      return `<li class="ev error">${time}<b class="fail">Editor API error</b> after ${num(Number(e.duration_ms))} ms ${foldedPre(summariseJson(e.error), 'error')}</li>`;
    case 'tool':
      return toolHtml(e, time);
    case 'stop':
      return `<li class="ev stop">${time}<b>Stop: ${esc(String(e.reason))}</b>${e.error !== undefined ? ` — ${esc(String(e.error))}` : ''}</li>`;
    case 'submit':
      return `<li class="ev submit">${time}<b>Submitted</b> ${foldedPre(summariseJson(isObject(e.result) ? { ...e.result, budget: undefined } : e.result), 'submit result')}</li>`;
    default: {
      const { line: _line, time: _time, type, ...rest } = e;
      return `<li class="ev note-entry">${time}<b>${esc(type)}</b> ${foldedPre(summariseJson(rest), type)}</li>`;
    }
  }
}

/** The messages a request adds to the conversation (the history it repeats is not shown again). */
function requestHtml(e: TraceEntry, seen: { chat: number; responses: number }, time: string): string {
  const body = isObject(e.body) ? e.body : {};
  const shown: string[] = [];
  if (Array.isArray(body.messages)) {
    const fresh = body.messages.slice(seen.chat).filter(isObject);
    seen.chat = body.messages.length;
    for (const m of fresh)
      if (m.role === 'system' || m.role === 'user') shown.push(messageHtml(String(m.role), m.content));
  } else if (Array.isArray(body.input)) {
    if (seen.responses === 0 && typeof body.instructions === 'string')
      shown.push(messageHtml('system', body.instructions));
    const fresh = body.input.slice(seen.responses).filter(isObject);
    seen.responses = body.input.length;
    for (const m of fresh)
      if (m.role === 'user' || m.role === 'system') shown.push(messageHtml(String(m.role), m.content));
  }
  const model = typeof body.model === 'string' ? ` to <code>${esc(body.model)}</code>` : '';
  return `<li class="ev request">${time}<b>Request</b>${model} (${esc(String(e.api ?? ''))})${shown.join('')}</li>`;
}

/** What the editor was asked matters most: messages (system prompt, brief) are kept far longer than other values. */
const MESSAGE_LIMIT = 20_000;

function messageHtml(role: string, content: unknown): string {
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((c) => (isObject(c) && typeof c.text === 'string' ? c.text : JSON.stringify(c))).join('\n')
        : JSON.stringify(content);
  return `<div class="msg ${esc(role)}"><span class="role">${esc(role)}</span>${foldedPre(cutText(text, MESSAGE_LIMIT), `${role} message`)}</div>`;
}

function responseHtml(e: TraceEntry, time: string): string {
  const body = isObject(e.body) ? e.body : {};
  const texts: string[] = [];
  const reasoning: string[] = [];
  const choice = Array.isArray(body.choices) && isObject(body.choices[0]) ? body.choices[0] : undefined;
  if (choice && isObject(choice.message)) {
    if (typeof choice.message.content === 'string') texts.push(choice.message.content);
    if (typeof choice.message.reasoning_content === 'string') reasoning.push(choice.message.reasoning_content);
  }
  if (Array.isArray(body.output)) {
    for (const item of body.output.filter(isObject)) {
      if (item.type === 'message' && Array.isArray(item.content))
        texts.push(...item.content.filter(isObject).map((c) => String(c.text ?? '')));
      if (item.type === 'reasoning' && Array.isArray(item.summary))
        reasoning.push(...item.summary.filter(isObject).map((s) => String(s.text ?? '')));
    }
  }
  if (typeof body.text === 'string' && body.text !== '') texts.push(body.text); // a script editor's final text
  const u = isObject(e.usage) ? e.usage : {};
  const calls = Array.isArray(e.tool_calls) ? e.tool_calls.length : 0;
  const usage = `input ${num(Number(u.input_tokens) || 0)} (cached ${num(Number(u.cached_input_tokens) || 0)}), output ${num(Number(u.output_tokens) || 0)} (reasoning ${num(Number(u.reasoning_tokens) || 0)})`;
  return `<li class="ev response">${time}<b>Reply</b> in ${num(Number(e.duration_ms))} ms · ${usage} tokens · ${calls} tool call(s)${e.truncated ? ' · <b class="fail">cut at the output limit</b>' : ''}
${reasoning.map((r) => `<div class="msg reasoning"><span class="role">reasoning</span>${foldedPre(cutText(r), 'reasoning')}</div>`).join('')}
${texts
  .filter((t) => t !== '')
  .map((t) => `<div class="msg assistant"><span class="role">assistant</span>${foldedPre(cutText(t), 'reply')}</div>`)
  .join('')}</li>`;
}

function parsedOutput(e: TraceEntry): { result?: unknown; error?: unknown; budget?: unknown } | undefined {
  try {
    const v = JSON.parse(String(e.output));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function toolHtml(e: TraceEntry, time: string): string {
  const output = parsedOutput(e);
  const error = isObject(output?.error) ? output.error : undefined;
  const result = error
    ? cutText(`${String(error.code ?? 'ERROR')}: ${String(error.message ?? '')}`, 2_000)
    : output
      ? summariseJson(output.result)
      : summariseText(String(e.output ?? ''));
  return `<li class="ev tool ${e.ok === false ? 'tool-error' : ''}" data-tool="${esc(String(e.name))}" data-ok="${e.ok === true}">${time}<b>${esc(String(e.name))}</b> <span class="note">${esc(String(e.call_id ?? ''))} · ${num(Number(e.duration_ms))} ms</span>
<div class="call"><span class="role">arguments</span>${foldedPre(summariseText(String(e.arguments ?? '')), 'arguments')}</div>
<div class="call result"><span class="role ${e.ok === false ? 'fail' : 'pass'}">${e.ok === false ? 'error' : 'result'}</span>${foldedPre(result, 'result')}</div>
${output?.budget !== undefined ? `<div class="budget"><span class="role">budget left</span><span>${budgetLine(output.budget)}</span></div>` : ''}</li>`;
}

/** The trace lines that become one line each once the transcript is over its share. */
const COMPACT_TYPES = new Set(['request', 'response', 'tool']);

/** A request, reply or tool call in one line, for pages whose transcript is over its share. */
function compactLine(e: TraceEntry): string {
  if (e.type === 'request') return `<li class="ev request compact">Request (trace line ${e.line})</li>`;
  if (e.type === 'response') {
    const u = isObject(e.usage) ? e.usage : {};
    const calls = Array.isArray(e.tool_calls) ? e.tool_calls.length : 0;
    return `<li class="ev response compact">Reply in ${num(Number(e.duration_ms))} ms · input ${num(Number(u.input_tokens) || 0)}, output ${num(Number(u.output_tokens) || 0)} tokens · ${calls} tool call(s) · trace line ${e.line}</li>`;
  }
  const output = parsedOutput(e);
  const error = isObject(output?.error) ? ` ${esc(String(output.error.code))}` : '';
  return `<li class="ev tool compact" data-tool="${esc(String(e.name))}" data-ok="${e.ok === true}"><b>${esc(String(e.name))}</b> ${e.ok === false ? `<span class="fail">error${error}</span>` : '<span class="pass">ok</span>'} · ${num(Number(e.duration_ms))} ms · trace line ${e.line}${output?.budget !== undefined ? ` · left: ${budgetLine(output.budget)}` : ''}</li>`;
}

const CSS = `
nav.toc { margin: 12px 0; }
.scores { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.scores div { border: 1px solid #ddd; border-radius: 4px; padding: 6px 10px; flex: 1 1 140px; max-width: 280px; }
.scores b { display: block; font-size: 22px; } .scores span { display: block; font-weight: 600; } .scores small { color: #666; }
td .out { white-space: pre-wrap; overflow-wrap: anywhere; } .detail { color: #555; font-size: 11px; }
table.items, table.practice, table.ops, table.tensors { width: 100%; table-layout: auto; }
table.items td:nth-child(2) { width: 24%; } table.items td:nth-child(3), table.items td:nth-child(4) { width: 30%; }
.strip { display: flex; align-items: center; gap: 6px; margin: 2px 0; } .strip span { width: 110px; flex: none; font-size: 11px; color: #444; }
svg.heat { width: 300px; max-width: 100%; height: 12px; fill: #0072B2; } svg.heat rect.bg { fill: #eee; fill-opacity: 1; }
ol.transcript { list-style: none; padding: 0; } li.ev { border-left: 3px solid #ddd; padding: 2px 0 4px 10px; margin: 2px 0; }
li.ev time { color: #888; font-size: 11px; margin-right: 8px; } li.turn { border-left-color: #888; } li.turn h3 { display: inline; }
li.request { border-left-color: #56B4E9; } li.response { border-left-color: #0072B2; } li.tool { border-left-color: #009E73; }
li.tool-error { border-left-color: #D55E00; } li.stop, li.submit { border-left-color: #000; } li.compact { font-size: 12px; }
.role { font-size: 11px; color: #666; text-transform: uppercase; padding-top: 3px; }
.msg, .call, .budget { margin: 3px 0; display: grid; grid-template-columns: 96px minmax(0, 1fr); align-items: start; }
.budget-item { white-space: nowrap; margin-right: 8px; font-size: 12px; }
.final { border: 1px solid #ccc; padding: 6px 10px; border-radius: 4px; background: #fafafa; }
`;
