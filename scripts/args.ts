// Flag parsing shared by every command: one flat defaults object per command, like nanoGPT's train.py, with one line
// of help per flag and an example. A flag keeps its default's type (number, boolean, string, string[]). Every problem
// of one invocation (unknown flags, with the nearest known name; missing required flags; bad values; wrong number of
// positionals) is reported at once, before the command does any work. `--help`/`-h` prints the generated help.

export type FlagValue = string | number | boolean | string[] | undefined;
export type Defaults = Record<string, FlagValue>;

export type CommandSpec<D extends Defaults> = {
  /** What follows `npx iwibench <name>`, e.g. `run-pilot CALIBRATION`. */
  usage?: string;
  /** A short paragraph under the usage line. */
  description?: string;
  /** Whole command lines, at least one. */
  examples?: readonly string[];
  defaults: D;
  /** One line per flag. */
  help?: { [K in keyof D]: string };
  required?: readonly (keyof D)[];
  /** Number flags whose default is undefined. */
  numbers?: readonly (keyof D)[];
  /** Number flags that must be non-negative integers (seeds, counts, ports). */
  integers?: readonly (keyof D)[];
  choices?: { [K in keyof D]?: readonly string[] };
  /** Positional arguments: their names for the help, and how many may be given. */
  positionals?: { names: string; min: number; max?: number };
  /** Further checks of the values (a list, a combination); each problem is reported with the others. */
  check?: (flags: { [K in keyof D]: D[K] }, positionals: string[]) => string[];
};

/** A command's spec, typed from its defaults (each script exports one as `command`). */
export function defineCommand<D extends Defaults>(spec: CommandSpec<D>): CommandSpec<D> {
  return spec;
}

/** Thrown for `--help`/`-h`: the CLI prints `text` on stdout and exits 0. */
export class HelpRequested extends Error {
  constructor(readonly text: string) {
    super('help requested');
    this.name = 'HelpRequested';
  }
}

/** Thrown with every problem of an invocation, one per line. */
export class UsageError extends Error {
  constructor(
    readonly problems: string[],
    usage: string,
  ) {
    super(
      `${problems.length === 1 ? problems[0] : `${problems.length} problems:${problems.map((p) => `\n  - ${p}`).join('')}`}\n${usage}`,
    );
    this.name = 'UsageError';
  }
}

type Parsed<D extends Defaults> = { flags: { [K in keyof D]: D[K] }; positionals: string[] };

/** Parse argv against a command's spec; throws HelpRequested or a UsageError listing every problem. */
export function parseCommand<D extends Defaults>(argv: string[], spec: CommandSpec<D>): Parsed<D> {
  const { defaults } = spec;
  const names = Object.keys(defaults);
  const listed = (list: readonly (keyof D)[] | undefined, name: string) =>
    (list as readonly string[] | undefined)?.includes(name) ?? false;
  const isInteger = (name: string) => listed(spec.integers, name);
  const isNumber = (name: string) =>
    typeof defaults[name] === 'number' || listed(spec.numbers, name) || isInteger(name);
  const handlesHelp = !('help' in defaults); // a command with its own --help flag prints its own help
  const problems: string[] = [];
  const raw = new Map<string, string[] | true>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (handlesHelp && (arg === '--help' || arg === '-h')) throw new HelpRequested(helpText(spec));
    if (!arg.startsWith('-') || arg === '-' || /^-\d/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(arg.startsWith('--') ? 2 : 1, eq >= 0 ? eq : undefined);
    const inline = eq >= 0 ? arg.slice(eq + 1) : undefined;
    if (!arg.startsWith('--') || !names.includes(name)) {
      const near = nearest(name, names);
      problems.push(
        `unknown flag ${arg.slice(0, eq >= 0 ? eq : undefined)}${near ? ` (did you mean --${near}?)` : ''}`,
      );
      // Its value (where the command takes no positionals, or the flag meant takes one) is not reported again.
      const takesValue = !spec.positionals || (near !== undefined && typeof defaults[near] !== 'boolean');
      if (eq < 0 && takesValue && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) i++;
      continue;
    }
    if (typeof defaults[name] === 'boolean') {
      if (inline !== undefined) problems.push(`--${name} takes no value`);
      else raw.set(name, true);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith('--') && next.length > 2)) {
        problems.push(`--${name} needs a value`);
        continue;
      }
      value = next;
      i++;
    }
    const previous = raw.get(name);
    raw.set(name, Array.isArray(defaults[name]) && Array.isArray(previous) ? [...previous, value] : [value]);
  }

  const flags: Record<string, FlagValue> = { ...defaults };
  for (const [name, given] of raw) {
    if (given === true) {
      flags[name] = true;
      continue;
    }
    if (Array.isArray(defaults[name])) {
      flags[name] = given;
      continue;
    }
    const text = given[given.length - 1]!;
    if (isNumber(name)) {
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value)) problems.push(`--${name} must be a number, got "${text}"`);
      else if (isInteger(name) && !(Number.isInteger(value) && value >= 0))
        problems.push(`--${name} must be a non-negative integer, got "${text}"`);
      else flags[name] = value;
      continue;
    }
    const choices = spec.choices?.[name];
    if (choices && !choices.includes(text))
      problems.push(`--${name} must be ${alternatives(choices)}, got "${text}"${hint(text, choices)}`);
    flags[name] = text;
  }
  for (const name of (spec.required ?? []) as readonly string[]) {
    if (raw.has(name)) continue; // given, perhaps with a bad value (reported above)
    if (flags[name] === undefined || flags[name] === '' || (Array.isArray(flags[name]) && flags[name].length === 0))
      problems.push(`--${name} is required`);
  }
  const range = spec.positionals ?? { names: '', min: 0, max: 0 };
  const max = range.max ?? Infinity;
  if (positionals.length < range.min || positionals.length > max) {
    const wanted =
      range.min === max ? `${range.min}` : max === Infinity ? `at least ${range.min}` : `${range.min} to ${max}`;
    if (max === 0) problems.push(`unexpected argument${positionals.length > 1 ? 's' : ''} ${positionals.join(' ')}`);
    else problems.push(`expects ${wanted} argument(s) ${range.names}, got ${positionals.length}`);
  }
  if (spec.check) problems.push(...spec.check(flags as { [K in keyof D]: D[K] }, positionals));
  if (problems.length > 0)
    throw new UsageError(problems, `usage: npx iwibench ${usageLine(spec)} (--help for every flag)`);
  return { flags: flags as { [K in keyof D]: D[K] }, positionals };
}

type CommandModule = { main: (argv: string[]) => Promise<void> };

/**
 * A command made of subcommands (`bench NAME`, `pilot NAME`): the module argv's first word names, and the rest of
 * argv; no word or --help prints `usage`, an unknown one is a usage error with the nearest name.
 */
export async function loadSubcommand(
  argv: string[],
  table: Record<string, () => Promise<CommandModule>>,
  usage: string,
  what: string,
): Promise<{ name: string; rest: string[]; module: CommandModule }> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') throw new HelpRequested(usage);
  const load = table[name];
  if (!load) {
    const near = nearest(name, Object.keys(table));
    throw new UsageError([`unknown ${what} "${name}"${near ? ` (did you mean ${near}?)` : ''}`], usage);
  }
  return { name, rest, module: await load() };
}

/** The older form: defaults and options without help; same checks (positionals allowed only when asked for). */
export function parseFlags<D extends Defaults>(
  argv: string[],
  defaults: D,
  options: { required?: (keyof D)[]; positionals?: boolean; numbers?: (keyof D)[] } = {},
): Parsed<D> {
  const { positionals, ...rest } = options;
  return parseCommand(argv, { defaults, ...rest, positionals: positionals ? { names: '…', min: 0 } : undefined });
}

function usageLine(spec: { usage?: string }): string {
  return `${spec.usage ?? '<command>'} [flags]`;
}

/** The generated help: usage, description, every flag with its default, examples. */
export function helpText<D extends Defaults>(spec: CommandSpec<D>): string {
  const rows = Object.entries(spec.defaults).map(([name, value]) => {
    const required = (spec.required as readonly string[] | undefined)?.includes(name);
    const choices = spec.choices?.[name];
    const numeric = spec.numbers?.includes(name) || spec.integers?.includes(name) || typeof value === 'number';
    const metavar = typeof value === 'boolean' ? '' : choices ? ` ${choices.join('|')}` : numeric ? ' N' : ' VALUE';
    const empty = value === undefined || (Array.isArray(value) && value.length === 0);
    const shown = required
      ? 'required'
      : empty
        ? undefined
        : `default: ${Array.isArray(value) ? value.join(',') : String(value)}`;
    const line = [spec.help?.[name], Array.isArray(value) ? 'repeatable' : undefined, shown].filter(Boolean).join('; ');
    return [`--${name}${metavar}${Array.isArray(value) ? ' …' : ''}`, line] as const;
  });
  const width = Math.min(32, Math.max(0, ...rows.map(([flag]) => flag.length)));
  const flagLines = rows.map(([flag, line]) => `  ${flag.padEnd(width)}  ${line}`.trimEnd());
  return [
    `usage: npx iwibench ${usageLine(spec)}`,
    ...(spec.description ? ['', spec.description] : []),
    '',
    'flags:',
    ...(flagLines.length > 0 ? flagLines : ['  (none)']),
    '  --help, -h  this help',
    ...(spec.examples?.length
      ? ['', spec.examples.length === 1 ? 'example:' : 'examples:', ...spec.examples.map((e) => `  ${e}`)]
      : []),
  ].join('\n');
}

function alternatives(choices: readonly string[]): string {
  return choices.length <= 2 ? choices.join(' or ') : `one of ${choices.join(', ')}`;
}

function hint(text: string, known: readonly string[]): string {
  const near = nearest(text, known);
  return near ? ` (did you mean ${near}?)` : '';
}

/** The known name nearest to `name` by edit distance, if it is near enough to be a typo. */
export function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/** Levenshtein distance, underscores and hyphens counted as the same character. */
export function editDistance(a: string, b: string): number {
  const [x, y] = [a.replaceAll('_', '-'), b.replaceAll('_', '-')];
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    row = next;
  }
  return row[y.length]!;
}

/** Comma-separated integers, e.g. `--ids 2,105,2364`. */
export function parseIntList(text: string, what: string): number[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return items.map((item) => {
    const value = Number(item);
    if (!Number.isInteger(value)) throw new Error(`${what}: "${item}" is not an integer`);
    return value;
  });
}
