// MMLU-Pro against an OpenAI-compatible server, with OAI-API-MMLU-Pro's config.toml, flags and scoring
// (mmlu-pro/README.md).
//
//   npx iwibench mmlu-pro -u http://localhost:8000/v1 -m my-model --data_dir ~/data/mmlu-pro -p 16
//   npx iwibench mmlu-pro -c mmlu-pro/config.toml --category biology,law --subset 20
//   npx iwibench mmlu-pro compare eval_results/pristine eval_results/patched
//   npx iwibench mmlu-pro rescore eval_results/my-model --scoring lenient
//
// Settings: built-in defaults (the fork's example config), then ./config.toml or -c FILE, then flags. stdout: one
// JSON object (the run's summary, or the comparison); stderr: progress bar, the report and messages. Exit status 1
// when a request failed (not scored; a rerun asks it again). Flags are parsed here with node:util parseArgs, local
// to this command.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MultiBar, Presets } from 'cli-progress';
import { DEFAULTS as SETTINGS, readConfigFile, resolveConfig, type FlagOverrides } from '../mmlu-pro/config.ts';
import { compareFolders, comparisonTable } from '../mmlu-pro/compare.ts';
import { rescoreFolder } from '../mmlu-pro/rescore.ts';
import { runMmluPro } from '../mmlu-pro/runner.ts';
import { isScoringProfile, SCORING_PROFILES } from '../mmlu-pro/score.ts';

type Flag = { short?: string; type: 'string' | 'boolean'; multiple?: true; number?: true; help: string };

// --- flags --------------------------------------------------------------------------------------------------------
// The original's flags (with its short forms) first, then ours. Unset flags leave the config file's value.
const RUN_FLAGS: Record<string, Flag> = {
  config: {
    short: 'c',
    type: 'string',
    help: 'configuration file (default: ./config.toml if present, else the built-in defaults)',
  },
  url: { short: 'u', type: 'string', help: `server url (default ${SETTINGS.server.url})` },
  api: { short: 'a', type: 'string', help: 'api key' },
  model: { short: 'm', type: 'string', help: `model name (default ${SETTINGS.server.model})` },
  model_note: {
    type: 'string',
    help: 'a note on the model (e.g. a quantization): in the report and the output folder name',
  },
  timeout: { type: 'string', number: true, help: `request timeout in seconds (default ${SETTINGS.server.timeout})` },
  category: {
    type: 'string',
    multiple: true,
    help: 'categories to run: repeat the flag or separate with commas (default all 14)',
  },
  parallel: {
    short: 'p',
    type: 'string',
    number: true,
    help: `number of parallel requests (default ${SETTINGS.test.parallel})`,
  },
  verbosity: { short: 'v', type: 'string', number: true, help: 'verbosity level 0-2 (default 0)' },
  log_prompt: { type: 'boolean', help: 'keep each exact prompt in the result files (the example config turns it on)' },
  cot: { type: 'boolean', help: 'use the 5 chain-of-thought examples (the example config turns it on)' },
  language: {
    type: 'string',
    help: 'en | id | ja | ko | zh: system prompt, examples, data files, extraction phrases (default en)',
  },
  scoring: {
    type: 'string',
    help: `${SCORING_PROFILES.join(' | ')}: how answers are read and guessed (default original)`,
  },
  style: { type: 'string', help: 'multi_chat | single_chat | no_chat (default multi_chat)' },
  subset: { type: 'string', number: true, help: 'only the first N questions of each category' },
  data_dir: {
    type: 'string',
    help: 'parquet / JSON-lines folder, or a Hugging Face cache (default: the Hugging Face cache)',
  },
  output_dir: { type: 'string', help: 'result folder (default eval_results/<model>[-<model_note>])' },
  comment: { type: 'string', help: 'free text copied into the report' },
  help: { short: 'h', type: 'boolean', help: 'print this help' },
};
const COMPARE_FLAGS: Record<string, Flag> = {
  allow_different_scoring: { type: 'boolean', help: 'compare folders scored under different profiles' },
  help: { short: 'h', type: 'boolean', help: 'print this help' },
};
const RESCORE_FLAGS: Record<string, Flag> = {
  scoring: { type: 'string', help: `${SCORING_PROFILES.join(' | ')} (required)` },
  output_dir: { type: 'string', help: 'where the rescored folder goes (default DIR-<scoring>)' },
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
    `\nsubcommands:\n  ${USAGE.compare}\n  ${USAGE.rescore}\nstdout is one JSON object; the report and progress go to stderr.\n`,
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
  const { config: configFlag, help: _help, cot, log_prompt, ...rest } = values;
  // The original's store_true flags can only switch a setting on.
  const overrides = { ...rest, cot: cot || undefined, log_prompt: log_prompt || undefined } as FlagOverrides;
  const configFile = typeof configFlag === 'string' ? configFlag : existsSync('config.toml') ? 'config.toml' : null;
  const config = resolveConfig(configFile ? readConfigFile(configFile) : {}, overrides);

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
    `\n${summary.markdown_table}\nscoring: ${summary.scoring}\nreport: ${summary.output_dir}/report.txt\n`,
  );
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (summary.failed.length > 0) {
    process.stderr.write(
      `mmlu-pro: ${summary.failed.length} requests failed and were not scored; rerun the same command to ask them again\n`,
    );
    process.exitCode = 1;
  }
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
  process.stdout.write(`${JSON.stringify(comparison, null, 2)}\n`);
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
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}
