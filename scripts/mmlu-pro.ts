// MMLU-Pro against an OpenAI-compatible server, scored as TIGER-Lab's reference (mmlu-pro/README.md).
//
//   npx iwibench mmlu-pro --url http://localhost:8000/v1 --model my-model --cot --data_dir ~/data/mmlu-pro
//   npx iwibench mmlu-pro --config mmlu-pro/config.example.toml --parallel 16 --subset 20
//   npx iwibench mmlu-pro compare eval_results/pristine eval_results/patched
//
// Flags override config.toml. stdout: one JSON object (the run's summary, or the comparison); stderr: progress bar,
// the human report and messages. Exit status 1 when a request failed (not scored; a rerun asks it again).
import { MultiBar, Presets } from 'cli-progress';
import { readConfigFile, resolveConfig, type FlagOverrides } from '../mmlu-pro/config.ts';
import { compareFolders, comparisonTable } from '../mmlu-pro/compare.ts';
import { runMmluPro } from '../mmlu-pro/runner.ts';
import { parseFlags } from './args.ts';

// --- flags --------------------------------------------------------------------------------------------------------
// Undefined: not given, the config file or the built-in default decides (mmlu-pro/config.ts DEFAULTS).
const DEFAULTS = {
  config: undefined as string | undefined, // config.toml path
  url: undefined as string | undefined, // server base URL, e.g. http://localhost:8000/v1
  api: undefined as string | undefined, // API key
  model: undefined as string | undefined,
  timeout: undefined as number | undefined, // seconds per request attempt
  style: undefined as string | undefined, // multi_chat | single_chat | no_chat
  category: undefined as string | undefined, // one category, or several comma-separated
  parallel: undefined as number | undefined, // concurrent requests
  cot: false, // 5-shot chain-of-thought examples from the validation split
  language: undefined as string | undefined, // en | id | ja | ko | zh
  subset: undefined as number | undefined, // first N questions per category
  data_dir: undefined as string | undefined, // parquet / JSON-lines folder, or a Hugging Face cache
  output_dir: undefined as string | undefined, // default eval_results/<model>
  verbosity: undefined as number | undefined, // 0-2
  log_prompt: false, // keep each prompt in the result files
  comment: undefined as string | undefined,
  help: false,
};
const NUMBER_FLAGS = ['timeout', 'parallel', 'subset', 'verbosity'] as const;
// -------------------------------------------------------------------------------------------------------------------

const USAGE = `usage: npx iwibench mmlu-pro [--config config.toml] [flags]
       npx iwibench mmlu-pro compare RESULTS_A RESULTS_B

flags (override the config file): --url --api --model --timeout --style --category --parallel --cot --language
  --subset --data_dir --output_dir --verbosity --log_prompt --comment
stdout is one JSON object; the report and progress go to stderr.`;

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'compare') return compare(argv.slice(1));
  const { flags } = parseFlags(argv, DEFAULTS, { numbers: [...NUMBER_FLAGS] });
  if (flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { config: configFile, help: _help, cot, log_prompt, ...rest } = flags;
  // Boolean flags can only switch a setting on, as the reference's store_true flags.
  const overrides: FlagOverrides = { ...rest, cot: cot || undefined, log_prompt: log_prompt || undefined };
  const config = resolveConfig(configFile ? readConfigFile(configFile) : {}, overrides);

  const tty = process.stderr.isTTY === true;
  const bars = tty ? new MultiBar({ format: 'mmlu-pro |{bar}| {value}/{total} questions | ETA {eta_formatted}', hideCursor: false }, Presets.shades_classic) : null;
  let bar: ReturnType<MultiBar['create']> | null = null;
  const log = (message: string) => (bars?.isActive ? bars.log(`${message}\n`) : process.stderr.write(`${message}\n`));

  let summary;
  try {
    summary = await runMmluPro(config, {
      argv,
      events: {
        log,
        start: ({ toAsk, skipped }) => {
          log(`mmlu-pro: ${JSON.stringify({ ...config, server: { ...config.server, api_key: '…' } })}`);
          log(`mmlu-pro: ${toAsk} questions to ask, ${skipped} already answered, ${config.test.parallel} in parallel`);
          if (bars && toAsk > 0) bar = bars.create(toAsk, 0);
        },
        progress: (done) => bar?.update(done),
      },
    });
  } finally {
    bars?.stop();
  }
  process.stderr.write(`\n${summary.markdown_table}\nreport: ${summary.output_dir}/report.txt\n`);
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (summary.failed.length > 0) {
    process.stderr.write(`mmlu-pro: ${summary.failed.length} requests failed and were not scored; rerun the same command to ask them again\n`);
    process.exitCode = 1;
  }
}

async function compare(argv: string[]): Promise<void> {
  const { flags, positionals } = parseFlags(argv, { help: false }, { positionals: true });
  if (flags.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.length !== 2) throw new Error(`compare needs two result folders, got ${positionals.length}\n${USAGE}`);
  const comparison = compareFolders(positionals[0]!, positionals[1]!);
  process.stderr.write(`${comparisonTable(comparison)}\n`);
  process.stdout.write(`${JSON.stringify(comparison, null, 2)}\n`);
}
