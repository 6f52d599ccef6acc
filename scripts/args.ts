// Flag parsing shared by every command: one flat defaults object per command, like nanoGPT's train.py.
// A flag keeps its default's type (number, boolean, string, string[]); an unknown flag is an error.
import { parseArgs } from 'node:util';

export type FlagValue = string | number | boolean | string[] | undefined;
export type Defaults = Record<string, FlagValue>;

/** A flag whose default is `undefined` is a string flag that may be absent. Use `required` to insist on it. */
export function parseFlags<D extends Defaults>(
  argv: string[],
  defaults: D,
  options: { required?: (keyof D)[]; positionals?: boolean; numbers?: (keyof D)[] } = {},
): { flags: { [K in keyof D]: D[K] }; positionals: string[] } {
  const spec: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const [name, value] of Object.entries(defaults)) {
    spec[name] = typeof value === 'boolean' ? { type: 'boolean' } : Array.isArray(value) ? { type: 'string', multiple: true } : { type: 'string' };
  }
  const parsed = parseArgs({ args: argv, options: spec, strict: true, allowPositionals: options.positionals ?? false });
  const flags: Record<string, FlagValue> = { ...defaults };
  for (const [name, raw] of Object.entries(parsed.values)) {
    const fallback = defaults[name];
    const isNumber = typeof fallback === 'number' || options.numbers?.includes(name);
    if (isNumber) {
      const value = Number(raw);
      if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(value)) {
        throw new Error(`--${name} must be a number, got "${String(raw)}"`);
      }
      flags[name] = value;
    } else {
      flags[name] = raw as FlagValue;
    }
  }
  for (const name of options.required ?? []) {
    if (flags[name as string] === undefined || flags[name as string] === '') throw new Error(`--${String(name)} is required`);
  }
  return { flags: flags as { [K in keyof D]: D[K] }, positionals: parsed.positionals };
}

/** Comma-separated integers, e.g. `--ids 2,105,2364`. */
export function parseIntList(text: string, what: string): number[] {
  const items = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  return items.map((item) => {
    const value = Number(item);
    if (!Number.isInteger(value)) throw new Error(`${what}: "${item}" is not an integer`);
    return value;
  });
}
