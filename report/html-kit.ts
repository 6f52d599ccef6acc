// What every report page shares: escaping, number formats, the page shell with its inline CSS, folding of long
// values, and the word diff of two outputs. Pages are self-contained: no script, no external resource; whatever
// comes from a run (prompts, outputs, editor messages, tool results) is untrusted and goes through `esc`.

/** HTML-escapes text for element content and quoted attribute values. */
export const esc = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** SVG coordinates: two decimals are plenty. */
export const px = (v: number): string => String(Math.round(v * 100) / 100);

/** A number for people: integers with thousands separators, others to `digits` decimals; null is an em dash. */
export function num(value: number | null | undefined, digits = 3): string {
  if (value === null || value === undefined) return '—';
  if (Number.isInteger(value)) return value.toLocaleString('en');
  if (Math.abs(value) >= 1e5 || (value !== 0 && Math.abs(value) < 1e-3)) return value.toExponential(2);
  return value.toFixed(digits);
}

/** A percentage share of `part` in `whole`, or an em dash for no whole. */
export const share = (part: number, whole: number): string =>
  whole === 0 ? '—' : `${((100 * part) / whole).toFixed(0)} %`;

/** A complete page: inline CSS, no script. */
export function page(title: string, body: string, css = ''): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${BASE_CSS}${css}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/** Limits of what one rendered value may take; the rest is folded away and counted. */
export const FOLD = { text: 1_200, arrayItems: 24, numbers: 16, depth: 6, total: 16_000 } as const;

/**
 * A JSON value as readable text: long strings cut (with the count of characters left out), arrays of numbers
 * summarised (count, min, max, mean and the first few), long arrays and deep nesting cut. The result is plain
 * text, to be escaped by the caller; `folded` says whether anything was left out.
 */
export function summariseJson(value: unknown): Summary {
  let folded = false;
  const fold = () => {
    folded = true;
  };
  const render = (v: unknown, indent: string, depth: number): string => {
    if (v === null || v === undefined || typeof v === 'boolean') return String(v);
    if (typeof v === 'number') return String(v);
    if (typeof v === 'string') {
      if (v.length <= FOLD.text) return JSON.stringify(v);
      fold();
      return `${JSON.stringify(v.slice(0, FOLD.text))}… (${(v.length - FOLD.text).toLocaleString('en')} more characters)`;
    }
    const inner = indent + '  ';
    const compact = jsonLongerThan(v, 100) ? undefined : JSON.stringify(v);
    if (compact !== undefined && compact.length <= 100 && !compact.includes('\\n')) return compact; // small values stay on one line
    if (Array.isArray(v)) {
      if (v.length === 0) return '[]';
      const numbers = numericLeaves(v);
      if (numbers && numbers.values.length > FOLD.numbers) {
        fold();
        return numberSummary(numbers.values, numbers.shape);
      }
      if (depth >= FOLD.depth) {
        fold();
        return `[… ${v.length} items]`;
      }
      const shown = v.slice(0, FOLD.arrayItems).map((x) => inner + render(x, inner, depth + 1));
      if (v.length > FOLD.arrayItems) {
        fold();
        shown.push(`${inner}… ${v.length - FOLD.arrayItems} more items`);
      }
      if (numbers) return `[${v.map((x) => render(x, inner, depth + 1)).join(', ')}]`; // a short list of numbers on one line
      return `[\n${shown.join(',\n')}\n${indent}]`;
    }
    if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
      if (entries.length === 0) return '{}';
      if (depth >= FOLD.depth) {
        fold();
        return `{… ${entries.length} keys}`;
      }
      return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${render(x, inner, depth + 1)}`).join(',\n')}\n${indent}}`;
    }
    return String(v);
  };
  const text = render(value, '', 0);
  if (text.length > FOLD.total)
    return {
      text: `${text.slice(0, FOLD.total)}\n… (${(text.length - FOLD.total).toLocaleString('en')} more characters of this summary)`,
      folded: true,
      preview: preview(value, 0),
    };
  return { text, folded, preview: preview(value, 0) };
}

/**
 * Whether `v`'s JSON is surely longer than `limit` characters, from a lower bound of its length that stops counting
 * past the limit: the summary asks this of every nested value, and writing each one out made a large tool output's
 * summary cost its size times its depth. A value with its own toJSON is not bounded (false).
 */
function jsonLongerThan(v: unknown, limit: number): boolean {
  let length = 0;
  // true: past the limit; false: not yet; null: not bounded
  const add = (x: unknown): boolean | null => {
    if (typeof x === 'string') length += x.length + 2;
    else if (x === null || typeof x !== 'object') length += 1;
    else if (typeof (x as { toJSON?: unknown }).toJSON === 'function') return null;
    else if (Array.isArray(x)) {
      length += 1 + x.length; // brackets and commas
      for (const item of x) {
        const passed = add(item);
        if (passed !== false) return passed;
      }
    } else
      for (const [key, item] of Object.entries(x)) {
        if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue; // left out
        length += key.length + 4; // quotes, colon, and a comma or a brace
        const passed = add(item);
        if (passed !== false) return passed;
      }
    return length > limit;
  };
  return add(v) === true;
}

/** What a folded value shows closed: one line, nested values named by their size. */
export type Summary = { text: string; folded: boolean; preview?: string };

function preview(v: unknown, depth: number): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null || typeof v !== 'object') return String(v);
  if (Array.isArray(v)) {
    const numbers = numericLeaves(v);
    if (numbers)
      return numbers.values.length <= 6 && numbers.shape.length === 1
        ? `[${v.join(', ')}]`
        : `[${numbers.shape.join('×')} numbers]`;
    return depth > 0
      ? `[${v.length} items]`
      : `[${v
          .slice(0, 3)
          .map((x) => preview(x, depth + 1))
          .join(', ')}${v.length > 3 ? `, … ${v.length} items` : ''}]`;
  }
  const entries = Object.entries(v as Record<string, unknown>);
  if (depth > 1) return `{${entries.length} keys}`;
  const text = `{${entries.map(([k, x]) => `${k}: ${preview(x, depth + 1)}`).join(', ')}}`;
  return text.length > 200 ? `${text.slice(0, 200)}…}` : text;
}

/** The numbers of a (nested) array of numbers and its shape, or undefined when it holds anything else or is ragged. */
function numericLeaves(v: unknown[]): { values: number[]; shape: number[] } | undefined {
  if (v.every((x) => typeof x === 'number')) return { values: v as number[], shape: [v.length] };
  if (!v.every((x) => Array.isArray(x))) return undefined;
  const parts = v.map((x) => numericLeaves(x as unknown[]));
  if (parts.some((p) => !p) || parts.some((p) => JSON.stringify(p!.shape) !== JSON.stringify(parts[0]!.shape)))
    return undefined;
  return { values: parts.flatMap((p) => p!.values), shape: [v.length, ...parts[0]!.shape] };
}

function numberSummary(values: number[], shape: number[]): string {
  let min = Infinity,
    max = -Infinity,
    sum = 0,
    squares = 0;
  for (const x of values) {
    min = Math.min(min, x);
    max = Math.max(max, x);
    sum += x;
    squares += x * x;
  }
  const head = values
    .slice(0, 6)
    .map((x) => +x.toPrecision(4))
    .join(', ');
  return `[${shape.join('×')} numbers: min ${+min.toPrecision(4)}, max ${+max.toPrecision(4)}, mean ${+(sum / values.length).toPrecision(4)}, ‖·‖₂ ${+Math.sqrt(squares).toPrecision(4)}; first: ${head}, …]`;
}

/** Plain text (a message, a reply) cut after `limit` characters, with the count of those left out. */
export function cutText(text: string, limit = 4_000): Summary {
  if (text.length <= limit) return { text, folded: false };
  return {
    text: `${text.slice(0, limit)}… (${(text.length - limit).toLocaleString('en')} more characters)`,
    folded: true,
  };
}

/** Text that may or may not be JSON (tool arguments, tool output): summarised when it parses, cut when it does not. */
export function summariseText(text: string): Summary {
  try {
    return summariseJson(JSON.parse(text));
  } catch {
    return cutText(text, FOLD.text);
  }
}

/** A <pre> of a summarised value; one longer than a few lines is folded into <details> with its first line shown. */
export function foldedPre(summary: Summary, label: string, cls = ''): string {
  const lines = summary.text.split('\n');
  const note = summary.folded ? ' <span class="note">(long values summarised)</span>' : '';
  if (lines.length <= 8 && summary.text.length <= 600)
    return `<pre class="value ${cls}">${esc(summary.text)}</pre>${summary.folded ? note : ''}`;
  const closed = summary.preview ?? lines[0]!.slice(0, 160);
  return `<details class="value ${cls}"><summary><code>${esc(closed)}</code> <span class="note">${esc(label)}, ${lines.length} lines${summary.folded ? ', long values summarised' : ''}</span></summary><pre class="value">${esc(summary.text)}</pre></details>`;
}

/**
 * Word-level diff of two texts (longest common subsequence over whitespace-separated words): the `after` text
 * with its inserted words marked, and the `before` text with its removed words marked. Texts beyond `limit` words
 * are not diffed (quadratic); they are returned unmarked.
 */
export function diffWords(
  before: string,
  after: string,
  limit = 600,
): { before: string; after: string; same: boolean } {
  if (before === after) return { before: esc(before), after: esc(after), same: true };
  const a = before.split(/(\s+)/);
  const b = after.split(/(\s+)/);
  if (a.length > 2 * limit || b.length > 2 * limit) return { before: esc(before), after: esc(after), same: false };
  const n = a.length,
    m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const outA: string[] = [],
    outB: string[] = [];
  let i = 0,
    j = 0;
  const mark = (tag: 'del' | 'ins', word: string) => (/^\s*$/.test(word) ? esc(word) : `<${tag}>${esc(word)}</${tag}>`);
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      outA.push(esc(a[i]!));
      outB.push(esc(b[j]!));
      (i++, j++);
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) outA.push(mark('del', a[i++]!));
    else outB.push(mark('ins', b[j++]!));
  }
  while (i < n) outA.push(mark('del', a[i++]!));
  while (j < m) outB.push(mark('ins', b[j++]!));
  return { before: outA.join(''), after: outB.join(''), same: false };
}

/** A key–value table of flat arguments; arrays and objects as compact JSON. */
export function argsTable(args: Record<string, unknown>, cls = 'args'): string {
  const rows = Object.entries(args).map(([k, v]) => {
    const text =
      typeof v === 'string'
        ? v
        : Array.isArray(v) && v.every((x) => typeof x === 'string')
          ? v.join(', ')
          : JSON.stringify(v);
    return `<tr><th>${esc(k)}</th><td><code>${esc(text ?? 'undefined')}</code></td></tr>`;
  });
  return `<table class="${cls}"><tbody>${rows.join('')}</tbody></table>`;
}

/** The target that only knows the taskset's world (toy/target.ts's `_name_or_path`; a test holds them equal). */
export const TOY_MODEL_ID = 'iwibench/toy-target';
export const TOY_CAVEAT =
  "The target is the toy (toy/target): a small model that knows only the benchmark's own world. Its rewards show editing at work, not what an editor achieves on Gemma 3.";

const BASE_CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; padding: 0 24px; max-width: 1400px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 20px 0 6px; } h2 small, h1 small { font-weight: normal; color: #666; }
a { color: #0b5cad; } code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 2px 0; }
pre.value { background: #f6f6f6; padding: 4px 6px; border-radius: 3px; max-height: 360px; overflow-y: auto; }
details.value > summary { cursor: pointer; color: #444; overflow-wrap: anywhere; }
.note { color: #666; font-size: 12px; } .caveat { background: #fff4d6; border: 1px solid #e6c35c; padding: 6px 10px; border-radius: 3px; }
.warn { background: #fde8e8; border: 1px solid #e0a0a0; padding: 6px 10px; border-radius: 3px; }
dl.meta { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; font-size: 12px; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; text-align: left; overflow-wrap: anywhere; }
thead th { background: #f3f3f3; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.args th { background: #f7f7f7; white-space: nowrap; } table.args code { overflow-wrap: anywhere; }
.pass { color: #11703a; font-weight: 600; } .fail { color: #b3261e; font-weight: 600; }
ins { background: #d5f5dd; text-decoration: none; } del { background: #fbd9d7; }
`;
