// Settings of one MMLU-Pro run: built-in defaults (the values of OAI-API-MMLU-Pro 6c0efcf's example config.toml,
// which mmlu-pro/config.toml copies verbatim), then a config.toml (the fork's sections and keys, plus ours), then
// command-line flags. A key the original does not read is ignored, as toml.load leaves it, with a warning; a value of
// the wrong type or range is an error (every problem reported at once). The result is fully defaulted and frozen.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { CATEGORIES, isCategory, type Category } from './data.ts';
import { LANGUAGES, LANGUAGE_CODES, isLanguageCode, type LanguageCode } from './languages.ts';
import { STYLES, type Style } from './prompts.ts';
import { PY_WORD } from './python.ts';
import { SCORING_PROFILES, isScoringProfile, type ScoringProfile } from './score.ts';

export type MmluProConfig = {
  /** Free text copied into the report (the reference's top-level `comment`). */
  comment: string;
  server: { url: string; api_key: string; model: string; model_note: string; timeout: number; max_retries: number };
  inference: {
    temperature: number;
    top_p: number;
    max_tokens: number;
    /** Sent as the config gives it: a string or a list. */
    stop: string | string[];
    /** Ours: also stop at "Question:" (where a model starts inventing the next question); off in the original. */
    stop_at_question: boolean;
    system_prompt: string;
    style: Style;
  };
  test: {
    categories: Category[];
    parallel: number;
    cot: boolean;
    language: LanguageCode;
    scoring: ScoringProfile;
    subset: number | null;
    data_dir: string | null;
  };
  log: { verbosity: 0 | 1 | 2; log_prompt: boolean; output_dir: string | null };
};

// --- defaults -----------------------------------------------------------------------------------------------------
// The fork's example config.toml (mmlu-pro/config.toml) unless marked "ours".
export const DEFAULTS = {
  comment: '', // ours: free text copied into the report
  server: {
    url: 'http://localhost:8000/v1', // vLLM's OpenAI-compatible endpoint
    api_key: 'api key', // local servers ignore it; the SDK insists on one
    model: 'llama3',
    model_note: 'LORA', // a label for this run of the model (e.g. "Q4_K_M"): the output folder's name
    timeout: 600.0, // seconds per request attempt
    max_retries: 5, // ours: SDK retries (backoff 0.5 s doubling to 8 s); the SDK's own default is 2
  },
  inference: {
    temperature: 0.0,
    top_p: 1.0, // vLLM's default
    max_tokens: 1024,
    stop: '<|eot_id|>' as string | string[], // sent as given, a string or a list
    stop_at_question: false, // ours: also stop at "Question:"
    system_prompt: undefined as string | undefined, // undefined: the language's prompt (languages.ts)
    style: 'multi_chat' as Style,
  },
  test: {
    categories: [...CATEGORIES] as Category[],
    parallel: 16, // concurrent requests
    cot: true, // 5-shot CoT examples from the validation split
    language: 'en' as LanguageCode,
    scoring: 'original' as ScoringProfile, // ours: original | tiger | lenient (score.ts)
    subset: undefined as number | undefined, // first N questions per category; undefined: all
    data_dir: undefined as string | undefined, // undefined: the Hugging Face cache
  },
  log: {
    verbosity: 0, // 0 quiet, 1 extraction failures and skips, 2 every answer
    log_prompt: true, // store each prompt in <category>_result.json
    output_dir: undefined as string | undefined, // undefined: eval_results_<language>/<model>-<model_note>
  },
};
// -------------------------------------------------------------------------------------------------------------------

type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'strings' | 'string or strings';
const SCHEMA: Record<'server' | 'inference' | 'test' | 'log', Record<string, Kind>> = {
  server: {
    url: 'string',
    api_key: 'string',
    model: 'string',
    model_note: 'string',
    timeout: 'number',
    max_retries: 'integer',
  },
  inference: {
    temperature: 'number',
    top_p: 'number',
    max_tokens: 'integer',
    stop: 'string or strings',
    stop_at_question: 'boolean',
    system_prompt: 'string',
    style: 'string',
  },
  test: {
    categories: 'strings',
    parallel: 'integer',
    cot: 'boolean',
    language: 'string',
    scoring: 'string',
    subset: 'integer',
    data_dir: 'string',
  },
  log: { verbosity: 'integer', log_prompt: 'boolean', output_dir: 'string' },
};

/** Command-line flags and the setting each overrides. Names keep the reference's underscores. */
export const FLAG_SETTINGS = {
  url: 'server.url',
  api: 'server.api_key',
  model: 'server.model',
  model_note: 'server.model_note',
  timeout: 'server.timeout',
  style: 'inference.style',
  stop_at_question: 'inference.stop_at_question',
  category: 'test.categories', // one or more; each may be comma-separated
  parallel: 'test.parallel',
  cot: 'test.cot',
  language: 'test.language',
  scoring: 'test.scoring',
  subset: 'test.subset',
  data_dir: 'test.data_dir',
  verbosity: 'log.verbosity',
  log_prompt: 'log.log_prompt',
  output_dir: 'log.output_dir',
  comment: 'comment',
} as const;
export type FlagName = keyof typeof FLAG_SETTINGS;
export type FlagOverrides = Partial<Record<FlagName, string | string[] | number | boolean>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid MMLU-Pro settings:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Raw = {
  comment: unknown;
  server: Record<string, unknown>;
  inference: Record<string, unknown>;
  test: Record<string, unknown>;
  log: Record<string, unknown>;
};

/**
 * Parses a config.toml. Values of the wrong type are errors; sections and keys the runner does not know are left out
 * and named to `warn` (the original's toml.load keeps them and nothing reads them).
 */
export function readConfigFile(
  file: string,
  warn: (message: string) => void = (message) => console.warn(message),
): Partial<Raw> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new ConfigError([`cannot read config file ${file}`]);
  }
  let table: Record<string, unknown>;
  try {
    table = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError([`${file}: ${(error as Error).message}`]);
  }
  const problems: string[] = [];
  const known: Record<string, unknown> = {};
  for (const [section, value] of Object.entries(table)) {
    if (section === 'comment') {
      if (typeof value !== 'string') problems.push(`${file}: comment must be a string`);
      known.comment = value;
      continue;
    }
    if (!Object.hasOwn(SCHEMA, section)) {
      warn(
        `${file}: ignoring unknown ${isTable(value) ? 'section' : 'key'} "${section}" (known: comment, ${Object.keys(
          SCHEMA,
        )
          .map((s) => `[${s}]`)
          .join(', ')})`,
      );
      continue;
    }
    if (!isTable(value)) {
      problems.push(`${file}: "${section}" must be a [${section}] section`);
      continue;
    }
    const kinds = SCHEMA[section as keyof typeof SCHEMA];
    const keys: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const kind = Object.hasOwn(kinds, key) ? kinds[key] : undefined;
      if (!kind)
        warn(`${file}: ignoring unknown key "${key}" in [${section}] (known: ${Object.keys(kinds).join(', ')})`);
      else if (!hasKind(v, kind))
        problems.push(`${file}: [${section}] ${key} must be ${article(kind)}, got ${JSON.stringify(v)}`);
      else keys[key] = v;
    }
    known[section] = keys;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return known as Partial<Raw>;
}

/** Defaults, then the file's values, then the flags; checks every value and returns a frozen config. */
export function resolveConfig(file: Partial<Raw> = {}, flags: FlagOverrides = {}): MmluProConfig {
  const raw: Raw = {
    comment: file.comment ?? DEFAULTS.comment,
    server: { ...DEFAULTS.server, ...file.server },
    inference: { ...DEFAULTS.inference, ...file.inference },
    test: { ...DEFAULTS.test, ...file.test },
    log: { ...DEFAULTS.log, ...file.log },
  };
  for (const [flag, value] of Object.entries(flags) as [FlagName, FlagOverrides[FlagName]][]) {
    if (value === undefined) continue;
    const setting = Object.hasOwn(FLAG_SETTINGS, flag) ? FLAG_SETTINGS[flag] : undefined;
    if (!setting) throw new ConfigError([`unknown flag --${flag}`]);
    if (setting === 'comment') raw.comment = value;
    else {
      const [section, key] = setting.split('.') as [keyof typeof SCHEMA, string];
      raw[section][key] = flag === 'category' ? categoryList(value as string | string[]) : value;
    }
  }
  return deepFreeze(check(raw));
}

/** `--category a,b --category c` → [a, b, c]; an empty item stays, so that check() reports it instead of dropping it. */
function categoryList(value: string | string[]): string[] {
  return (Array.isArray(value) ? value : [value]).flatMap((item) => item.split(',').map((c) => c.trim()));
}

function check(raw: Raw): MmluProConfig {
  const problems: string[] = [];
  const need = (ok: boolean, message: string) => {
    if (!ok) problems.push(message);
  };
  const { server, inference, test, log } = raw;
  const isInt = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER) =>
    Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

  need(
    typeof server.url === 'string' && /^https?:\/\/[^\s]+$/.test(server.url),
    `server.url (--url) must be an http(s) URL, got ${JSON.stringify(server.url)}`,
  );
  need(typeof server.api_key === 'string', 'server.api_key (--api) must be a string');
  need(typeof server.model === 'string' && server.model.trim() !== '', 'server.model (--model) must not be empty');
  need(typeof server.model_note === 'string', 'server.model_note (--model_note) must be a string');
  need(
    typeof server.timeout === 'number' && server.timeout > 0,
    `server.timeout (--timeout) must be a positive number of seconds, got ${JSON.stringify(server.timeout)}`,
  );
  need(
    isInt(server.max_retries, 0, 20),
    `server.max_retries must be an integer from 0 to 20, got ${JSON.stringify(server.max_retries)}`,
  );

  need(
    typeof inference.temperature === 'number' && inference.temperature >= 0,
    'inference.temperature must be a number ≥ 0',
  );
  need(
    typeof inference.top_p === 'number' && inference.top_p > 0 && inference.top_p <= 1,
    'inference.top_p must be in (0, 1]',
  );
  need(isInt(inference.max_tokens, 1), 'inference.max_tokens must be a positive integer');
  const stop = inference.stop;
  need(
    typeof stop === 'string' || (Array.isArray(stop) && stop.every((s) => typeof s === 'string')),
    'inference.stop must be a string or a list of strings',
  );
  need(typeof inference.stop_at_question === 'boolean', 'inference.stop_at_question must be true or false');
  need(
    inference.system_prompt === undefined || typeof inference.system_prompt === 'string',
    'inference.system_prompt must be a string',
  );
  need(
    (STYLES as readonly unknown[]).includes(inference.style),
    `inference.style (--style) must be one of ${STYLES.join(', ')}, got ${JSON.stringify(inference.style)}`,
  );

  const categories = test.categories as unknown[];
  const unknown = Array.isArray(categories) ? categories.filter((c) => typeof c !== 'string' || !isCategory(c)) : [];
  need(
    Array.isArray(categories) && categories.length > 0,
    'test.categories (--category) must name at least one category',
  );
  need(
    unknown.length === 0,
    `unknown categor${unknown.length > 1 ? 'ies' : 'y'} ${unknown.map((c) => JSON.stringify(c)).join(', ')} (known: ${CATEGORIES.join(', ')})`,
  );
  need(
    !Array.isArray(categories) || new Set(categories).size === categories.length,
    'test.categories (--category) names a category twice',
  );
  need(
    isInt(test.parallel, 1, 1024),
    `test.parallel (--parallel) must be an integer from 1 to 1024, got ${JSON.stringify(test.parallel)}`,
  );
  need(typeof test.cot === 'boolean', 'test.cot (--cot) must be true or false');
  const language = test.language;
  need(
    typeof language === 'string' && isLanguageCode(language),
    `test.language (--language) must be one of ${LANGUAGE_CODES.join(', ')}, got ${JSON.stringify(test.language)}`,
  );
  need(
    isScoringProfile(test.scoring),
    `test.scoring (--scoring) must be one of ${SCORING_PROFILES.join(', ')}, got ${JSON.stringify(test.scoring)}`,
  );
  need(
    test.subset === undefined || isInt(test.subset, 1),
    `test.subset (--subset) must be a positive integer, got ${JSON.stringify(test.subset)}`,
  );
  need(
    test.data_dir === undefined || (typeof test.data_dir === 'string' && test.data_dir !== ''),
    'test.data_dir (--data_dir) must be a folder',
  );

  need(
    isInt(log.verbosity, 0, 2),
    `log.verbosity (--verbosity) must be 0, 1 or 2, got ${JSON.stringify(log.verbosity)}`,
  );
  need(typeof log.log_prompt === 'boolean', 'log.log_prompt must be true or false');
  need(
    log.output_dir === undefined || (typeof log.output_dir === 'string' && log.output_dir !== ''),
    'log.output_dir (--output_dir) must be a folder',
  );
  need(typeof raw.comment === 'string', 'comment must be a string');

  if (problems.length > 0) throw new ConfigError(problems);
  const lang = language as LanguageCode;
  return {
    comment: raw.comment as string,
    server: {
      url: server.url as string,
      api_key: server.api_key as string,
      model: server.model as string,
      model_note: server.model_note as string,
      timeout: server.timeout as number,
      max_retries: server.max_retries as number,
    },
    inference: {
      temperature: inference.temperature as number,
      top_p: inference.top_p as number,
      max_tokens: inference.max_tokens as number,
      stop: (Array.isArray(stop) ? [...stop] : stop) as string | string[],
      stop_at_question: inference.stop_at_question as boolean,
      system_prompt: (inference.system_prompt as string | undefined) ?? LANGUAGES[lang].systemPrompt,
      style: inference.style as Style,
    },
    test: {
      categories: categories as Category[],
      parallel: test.parallel as number,
      cot: test.cot as boolean,
      language: lang,
      scoring: test.scoring as ScoringProfile,
      subset: (test.subset as number | undefined) ?? null,
      data_dir: (test.data_dir as string | undefined) ?? null,
    },
    log: {
      verbosity: log.verbosity as 0 | 1 | 2,
      log_prompt: log.log_prompt as boolean,
      output_dir: (log.output_dir as string | undefined) ?? null,
    },
  };
}

/**
 * The original's output folder: `eval_results_<language>/` + the model name with every non-word character (Python's
 * \W) made "-", then "-" and the note as it is (an empty note still leaves the "-").
 */
export function outputFolder(config: Pick<MmluProConfig, 'server' | 'test'>): string {
  const model = config.server.model.replace(new RegExp(`(?!${PY_WORD}).`, 'gsu'), '-');
  return path.join(`eval_results_${config.test.language}`, `${model}-${config.server.model_note}`);
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null) deepFreeze(inner);
  return Object.freeze(value);
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number';
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'strings':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
    case 'string or strings':
      return typeof value === 'string' || hasKind(value, 'strings');
  }
}

function article(kind: Kind): string {
  return kind === 'strings'
    ? 'a list of strings'
    : kind === 'string or strings'
      ? 'a string or a list of strings'
      : kind === 'integer'
        ? 'an integer'
        : `a ${kind}`;
}
