// What Python's str, re and json do where the original (run_openai.py) relies on them and JavaScript differs:
// which characters are whitespace (str.strip, \s) and word characters (\b, \W), `f"{x:.2f}"` rounding, and the
// bytes of `json.dumps(value, indent="\t")` (ASCII only, floats written as floats).

/** Python's whitespace for str (str.isspace, re's \s): JavaScript's \s lacks \x1c-\x1f and \x85, and adds \ufeff. */
export const PY_SPACE =
  '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';

/** Python's word character for str (re's \w, hence \b and \W): Unicode letters, digits and "_". Needs the u flag. */
export const PY_WORD = '[\\p{L}\\p{N}_]';

const LEADING_SPACE = new RegExp(`^${PY_SPACE}+`);
const TRAILING_SPACE = new RegExp(`${PY_SPACE}+$`);

/** `text.strip()`. */
export function pyStrip(text: string): string {
  return text.replace(LEADING_SPACE, '').replace(TRAILING_SPACE, '');
}

/**
 * Python's `f"{x:.{digits}f}"`: the exact binary value rounded half to even. JavaScript's toFixed rounds an exact tie
 * up (97 / 800 * 100 is exactly 12.125: Python "12.12", toFixed "12.13"); toFixed(100) is exact for these numbers.
 */
export function pythonFixed(x: number, digits: number): string {
  if (!Number.isFinite(x) || Math.abs(x) >= 1e21) return x.toFixed(digits);
  const exact = Math.abs(x).toFixed(100);
  const [whole, fraction] = exact.split('.') as [string, string];
  const rest = fraction.slice(digits);
  let kept = BigInt(whole + fraction.slice(0, digits));
  const half = `5${'0'.repeat(rest.length - 1)}`;
  if (rest > half || (rest === half && kept % 2n === 1n)) kept += 1n;
  const text = kept.toString().padStart(digits + 1, '0');
  const rounded = digits === 0 ? text : `${text.slice(0, -digits)}.${text.slice(-digits)}`;
  return x < 0 || Object.is(x, -0) ? `-${rounded}` : rounded; // Python keeps the sign: f"{-0.004:.2f}" is "-0.00"
}

/** `repr(float(x))`: the shortest round-trip digits (as JavaScript's), fixed from 1e-4 to 1e16, else "1e-05". */
export function pythonFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const [mantissa, exponentText] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) {
    const e = `${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
    return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${e}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`;
}

/**
 * `json.dumps(value, indent="\t")`: no trailing newline, every character outside \x20-\x7e escaped as \uXXXX (UTF-16 units,
 * lower-case hex). Numbers are written as Python floats (`3.0`) when `floats`, else as integers.
 */
export function pythonJson(value: unknown, floats = false, indent = ''): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return floats ? pythonFloat(value) : JSON.stringify(value);
  if (typeof value !== 'object') return asciiOnly(JSON.stringify(value));
  const inner = `${indent}\t`;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => inner + pythonJson(v, floats, inner)).join(',\n')}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  const items = entries.map(([k, v]) => `${inner}${asciiOnly(JSON.stringify(k))}: ${pythonJson(v, floats, inner)}`);
  return `{\n${items.join(',\n')}\n${indent}}`;
}

function asciiOnly(json: string): string {
  return json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
