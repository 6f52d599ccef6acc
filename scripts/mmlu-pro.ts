// MMLU-Pro against an OpenAI-compatible server, with OAI-API-MMLU-Pro's config.toml, flags and scoring
// (mmlu-pro/README.md).
//
//   npx iwibench mmlu-pro -u http://localhost:8000/v1 -m my-model --data_dir ~/data/mmlu-pro -p 16
//   npx iwibench mmlu-pro -c mmlu-pro/config.toml --category biology,law --subset 20
//   npx iwibench mmlu-pro compare eval_results/pristine eval_results/patched
//   npx iwibench mmlu-pro rescore eval_results/my-model --scoring lenient
//
// Settings: built-in defaults (the fork's example config), then ./config.toml or -c FILE, then flags. stdout: a short
// summary (--json: one JSON object, the run's summary or the comparison); stderr: progress bar, the report and
// messages. Exit status 1 when a request failed (not scored; a rerun asks it again). Flags are parsed here with
// node:util parseArgs, local to this command.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MultiBar, Presets } from 'cli-progress';
import {
  readConfigFile,
  resolveConfig,
  type FlagOverrides,
  compareFolders,
  comparisonTable,
  rescoreFolder,
  runMmluPro,
  isScoringProfile,
  SCORING_PROFILES,
  type RunSummary,
} from '../mmlu-pro/index.ts';
import { count, figure, JSON_FLAG_HELP, printResult, type Summary } from './summary.ts';

type Flag = { short?: string; type: 'string' | 'boolean'; multiple?: true; number?: true; help: string };

// --- flags --------------------------------------------------------------------------------------------------------
// The original's flags (run_openai.py 6c0efcf -h: its short forms and help), then ours. As there, a flag left out,
// empty or 0 leaves the config file's value (`if args.x:`); --model sets the model note too and --model_note sets
// nothing; --language counts only with --cot, and --cot sets the language (default en).
const RUN_FLAGS: Record<string, Flag> = {
  config: {
    short: 'c',
    type: 'string',
    help: 'Configuration file. Default=config.toml (ours: the built-in defaults when there is none)',
  },
  url: { short: 'u', type: 'string', help: 'server url' },
  api: { short: 'a', type: 'string', help: 'api key' },
  model: { short: 'm', type: 'string', help: 'Model name (also the model note, as in the original)' },
  model_note: { type: 'string', help: 'Additional note on model name (ignored, as in the original)' },
  timeout: { type: 'string', number: true, help: 'Request timeout in seconds' },
  category: {
    type: 'string',
    multiple: true,
    help: 'a category (ours: repeat the flag or separate with commas for more)',
  },
  parallel: { short: 'p', type: 'string', number: true, help: 'Number of parallel requests' },
  verbosity: { short: 'v', type: 'string', number: true, help: 'Verbosity level 0-2' },
  log_prompt: { type: 'boolean', help: 'Writes exact prompt and response into log.txt' },
  cot: { type: 'boolean', help: 'Use COT instructions' },
  language: {
    type: 'string',
    help: 'Language of MMLU-Pro test. Default=en. Supported: en, id, ja, ko, zh (only with --cot, as in the original)',
  },
  scoring: {
    type: 'string',
    help: `${SCORING_PROFILES.join(' | ')}: how answers are read and guessed (default original; no_random: no guess)`,
  },
  style: { type: 'string', help: 'multi_chat | single_chat | no_chat (default multi_chat)' },
  stop_at_question: { type: 'boolean', help: 'also stop at "Question:" (not sent by the original)' },
  subset: { type: 'string', number: true, help: 'only the first N questions of each category' },
  data_dir: {
    type: 'string',
    help: 'parquet / JSON-lines folder, or a Hugging Face cache (default: the Hugging Face cache)',
  },
  output_dir: { type: 'string', help: 'result folder (default eval_results_<language>/<model>-<model_note>)' },
  comment: { type: 'string', help: 'free text copied into the report' },
  json: { type: 'boolean', help: JSON_FLAG_HELP.json },
  help: { short: 'h', type: 'boolean', help: 'print this help' },
};
const COMPARE_FLAGS: Record<string, Flag> = {
  allow_different_scoring: { type: 'boolean', help: 'compare folders scored under different profiles' },
  json: { type: 'boolean', help: JSON_FLAG_HELP.json },
  help: { short: 'h', type: 'boolean', help: 'print this help' },
};
const RESCORE_FLAGS: Record<string, Flag> = {
  scoring: { type: 'string', help: `${SCORING_PROFILES.join(' | ')} (required)` },
  output_dir: { type: 'string', help: 'where the rescored folder goes (default DIR-<scoring>)' },
  json: { type: 'boolean', help: JSON_FLAG_HELP.json },
  help: { short: 'h', type: 'boolean', help: 'print this help' },
};
// -------------------------------------------------------------------------------------------------------------------

const USAGE = {
  run: 'usage: npx iwibench mmlu-pro [-c config.toml] [flags]',
  compare: 'usage: npx iwibench mmlu-pro compare RESULTS_A RESULTS_B [--allow_different_scoring]',
  rescore: 'usage: npx iwibench mmlu-pro rescore RESULTS --scoring original|tiger|lenient [--output_dir DIR]',
};

function helpText(usage: string, flags: Record<string, Flag>, example: string): string {
  const name = (n: string, f: Flag) =>
    `${f.short ? `-${f.short}, ` : '    '}--${n}${f.type === 'string' ? ' VALUE' : ''}`;
  const width = Math.max(...Object.entries(flags).map(([n, f]) => name(n, f).length));
  const lines = Object.entries(flags).map(([n, f]) => `  ${name(n, f).padEnd(width)}  ${f.help}`);
  return `${usage}\n\n${lines.join('\n')}\n\nexample: ${example}\n`;
}

const HELP = {
  run:
    `${helpText(USAGE.run, RUN_FLAGS, 'npx iwibench mmlu-pro -u http://localhost:8000/v1 -m my-model --category biology,law')}` +
    `\nsubcommands:\n  ${USAGE.compare}\n  ${USAGE.rescore}\nstdout is a summary (--json: one JSON object); the report and progress go to stderr.\n`,
  compare: helpText(
    USAGE.compare,
    COMPARE_FLAGS,
    'npx iwibench mmlu-pro compare eval_results/pristine eval_results/patched',
  ),
  rescore: helpText(
    USAGE.rescore,
    RESCORE_FLAGS,
    'npx iwibench mmlu-pro rescore eval_results/llama3 --scoring lenient',
  ),
};

/** parseArgs over `flags`; every problem at once; numbers checked here, before any slow work. */
function parse(argv: string[], flags: Record<string, Flag>, positionals: boolean) {
  const options = Object.fromEntries(
    Object.entries(flags).map(([n, f]) => [
      n,
      { type: f.type, ...(f.short ? { short: f.short } : {}), ...(f.multiple ? { multiple: true } : {}) },
    ]),
  );
  const parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: positionals });
  const values: Record<string, string | string[] | number | boolean> = {};
  const problems: string[] = [];
  for (const [n, raw] of Object.entries(parsed.values)) {
    if (flags[n]!.number) {
      const value = Number(raw);
      if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(value))
        problems.push(`--${n} must be a number, got "${String(raw)}"`);
      values[n] = value;
    } else if (raw !== undefined) {
      values[n] = raw as string | string[] | boolean;
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return { values, positionals: parsed.positionals };
}

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'compare') return compare(argv.slice(1));
  if (argv[0] === 'rescore') return rescore(argv.slice(1));
  const { values } = parse(argv, RUN_FLAGS, false);
  if (values.help) {
    process.stdout.write(HELP.run);
    return;
  }
  const warn = (message: string) => process.stderr.write(`mmlu-pro: ${message}\n`);
  const configFile =
    typeof values.config === 'string' ? values.config : existsSync('config.toml') ? 'config.toml' : null;
  const config = resolveConfig(configFile ? readConfigFile(configFile, warn) : {}, originalOverrides(values, warn));

  const tty = process.stderr.isTTY === true;
  const bars = tty
    ? new MultiBar(
        { format: 'mmlu-pro |{bar}| {value}/{total} questions | ETA {eta_formatted}', hideCursor: false },
        Presets.shades_classic,
      )
    : null;
  let bar: ReturnType<MultiBar['create']> | null = null;
  const log = (message: string) => (bars?.isActive ? bars.log(`${message}\n`) : process.stderr.write(`${message}\n`));

  let summary;
  try {
    summary = await runMmluPro(config, {
      argv,
      events: {
        log,
        start: ({ toAsk, skipped }) => {
          log(
            `mmlu-pro: config ${configFile ?? '(built-in defaults)'}: ${JSON.stringify({ ...config, server: { ...config.server, api_key: '…' } })}`,
          );
          log(
            `mmlu-pro: ${toAsk} questions to ask, ${skipped} already answered, ${config.test.parallel} in parallel, scoring ${config.test.scoring}`,
          );
          if (bars && toAsk > 0) bar = bars.create(toAsk, 0);
        },
        progress: (done) => bar?.update(done),
      },
    });
  } finally {
    bars?.stop();
  }
  process.stderr.write(
    `\n${summary.report}scoring: ${summary.scoring}\nReport saved to: ${summary.output_dir}/report.txt\n`,
  );
  printResult(
    values.json === true,
    'mmlu-pro',
    summary,
    runSummary(summary, 'results per category, report.txt, run.json'),
  );
  if (summary.failed.length > 0) {
    process.stderr.write(
      `mmlu-pro: ${summary.failed.length} requests failed and were not scored; rerun the same command to ask them again\n`,
    );
    process.exitCode = 1;
  }
}

const ORIGINAL_FLAGS = ['url', 'api', 'model', 'timeout', 'category', 'parallel', 'verbosity', 'log_prompt', 'cot'];

/** The flags as run_openai.py 6c0efcf applies them (see RUN_FLAGS); ours as given. */
function originalOverrides(values: Record<string, unknown>, warn: (message: string) => void): FlagOverrides {
  const { config: _config, help: _help, json: _json, model_note, language, ...rest } = values;
  const overrides: Record<string, unknown> = Object.fromEntries(
    Object.entries(rest).filter(
      ([flag, value]) => !ORIGINAL_FLAGS.includes(flag) || (value !== 0 && value !== '' && value !== false),
    ),
  );
  if (overrides.model !== undefined) overrides.model_note = overrides.model;
  if (model_note !== undefined)
    warn(
      '--model_note is ignored, as in run_openai.py 6c0efcf (--model sets the note; or set model_note in the config)',
    );
  if (overrides.cot) overrides.language = language ?? 'en';
  else if (language !== undefined)
    warn('--language is ignored without --cot, as in run_openai.py 6c0efcf (or set language in the config)');
  return overrides as FlagOverrides;
}

async function compare(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv, COMPARE_FLAGS, true);
  if (values.help) {
    process.stdout.write(HELP.compare);
    return;
  }
  if (positionals.length !== 2)
    throw new Error(`compare needs two result folders, got ${positionals.length}\n${USAGE.compare}`);
  const comparison = compareFolders(positionals[0]!, positionals[1]!, {
    allowDifferentScoring: values.allow_different_scoring === true,
  });
  process.stderr.write(`${comparisonTable(comparison)}\n`);
  const { overall } = comparison;
  printResult(values.json === true, 'mmlu-pro compare', comparison, {
    wrote: [],
    figures: [
      `accuracy ${figure(overall.a_accuracy)} in ${comparison.a}, ${figure(overall.b_accuracy)} in ${comparison.b} over ${count(overall.paired, 'paired question')}: difference ${figure(overall.difference)}, McNemar p ${figure(overall.p_value)}`,
    ],
  });
}

async function rescore(argv: string[]): Promise<void> {
  const { values, positionals } = parse(argv, RESCORE_FLAGS, true);
  if (values.help) {
    process.stdout.write(HELP.rescore);
    return;
  }
  const problems: string[] = [];
  if (positionals.length !== 1) problems.push(`rescore needs one result folder, got ${positionals.length}`);
  if (!isScoringProfile(values.scoring)) {
    problems.push(
      `--scoring must be one of ${SCORING_PROFILES.join(', ')}, got ${JSON.stringify(values.scoring ?? null)}`,
    );
  }
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\n${USAGE.rescore}`);
  const summary = rescoreFolder(
    positionals[0]!,
    values.scoring as (typeof SCORING_PROFILES)[number],
    values.output_dir as string | undefined,
  );
  process.stderr.write(
    `\n${summary.markdown_table}\nscoring: ${summary.scoring}\nreport: ${summary.output_dir}/report.txt\n`,
  );
  printResult(
    values.json === true,
    'mmlu-pro rescore',
    summary,
    runSummary(summary, `results per category rescored under ${summary.scoring}, report.txt, run.json`),
  );
}

/** A run's (or a rescore's) folder and its overall figures. */
function runSummary(summary: RunSummary, what: string): Summary {
  const { overall } = summary;
  return {
    wrote: [[summary.output_dir, what]],
    figures: [
      `accuracy ${figure(overall.accuracy)} over ${count(overall.total, 'question')} (adjusted ${figure(overall.adjusted_accuracy)}, unparsed ${figure(overall.unparsed_rate)}), scoring ${summary.scoring}`,
      `${summary.asked} asked, ${summary.skipped} already answered, ${summary.failed.length} failed`,
    ],
  };
}
