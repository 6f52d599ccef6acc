// npx iwibench demo [--output-dir runs/demo] [--model-dir DIR] [--editor-model builtin:rank-one] [--families a,b]
//                   [--calibration-seeds 8] [--seed 0]
// The main job end to end on an embedded default, with no GPU, no key and no download: the committed toy target
// (toy/target, a small Gemma 3 trained on the taskset's world), calibration, the service, each family's first
// eligible episode with a built-in editor, fresh-process evaluation, and the report. Rerunning the same command
// resumes (the calibration and completed attempts are kept). Prints a summary (--json: the paths and counts as JSON).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { checkpointTokenizer, ItemEvaluator, type BatchLimit } from '../service/evaluate.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { Checkpoint, Tokenizer } from '../engine/index.ts';
import {
  calibrate,
  type Calibration,
  resumeLine,
  runPilot,
  Evaluator,
  Taskset,
  FAMILY_IDS,
  type FamilyId,
} from '../taskset/index.ts';
import { writeReport } from '../report/index.ts';
import { startServiceProcess } from './service-process.ts';
import { TOY_TARGET_DIR } from '../toy/target.ts';
import { defineCommand, parseCommand } from './args.ts';
import { familyList, familyProblems } from './family-flags.ts';
import { attemptLine, attemptsLine, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';
import { BATCH_FLAG_DEFAULTS, BATCH_FLAG_HELP, batchLimitFromFlags } from './target-flags.ts';
import { EDITOR_FLAG_CHOICES, EDITOR_FLAG_DEFAULTS, EDITOR_FLAG_HELP, editorFromFlags } from './editor-flags.ts';

const defaults = {
  'output-dir': 'runs/demo',
  'model-dir': TOY_TARGET_DIR,
  families: FAMILY_IDS.join(','),
  seed: 0, // the episode of a family that calibration leaves without an eligible one (or of every family, with --calibration-seeds 0)
  'calibration-seeds': 8, // calibrate on the pristine target over seeds 0…N−1 and run each family's first eligible episode
  workers: 1,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
  'editor-model': 'builtin:rank-one',
  ...BATCH_FLAG_DEFAULTS,
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'demo',
  description:
    "Calibrate the toy target, run each family's first eligible episode with a built-in editor, evaluate in fresh processes, report. Rerunning resumes.",
  examples: [
    'npx iwibench demo',
    'npx iwibench demo --families local_factual_update --items-per-kind 2 --output-dir runs/demo-smoke',
  ],
  defaults,
  help: {
    'output-dir': 'calibration.json, attempts/, report/',
    'model-dir': 'the target checkpoint folder',
    families: 'comma-separated families to run',
    seed: 'the episode of a family that calibration leaves without an eligible one (of every family with --calibration-seeds 0)',
    'calibration-seeds': "calibrate over seeds 0…N−1 and run each family's first eligible episode; 0: no calibration",
    workers: 'editors at once',
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    ...EDITOR_FLAG_HELP,
    ...BATCH_FLAG_HELP,
    ...JSON_FLAG_HELP,
  },
  integers: ['seed', 'calibration-seeds', 'workers', 'items-per-kind', 'max-batch'],
  choices: EDITOR_FLAG_CHOICES,
  check: (flags) => familyProblems(flags.families),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const { config, label } = await editorFromFlags(flags);
  const outputDir = path.resolve(flags['output-dir']);
  mkdirSync(outputDir, { recursive: true });
  const started = Date.now();
  const log = (message: string) =>
    process.stderr.write(`demo [${((Date.now() - started) / 1000).toFixed(0)} s] ${message}\n`);

  const modelDir = path.resolve(flags['model-dir']);
  const checkpoint = Checkpoint.open(modelDir);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();

  const families = familyList(flags.families);
  const batch = batchLimitFromFlags(flags);
  const episodes = await demoEpisodes(
    families,
    flags['calibration-seeds'],
    flags.seed,
    modelDir,
    outputDir,
    log,
    batch,
  );

  log('starting the service');
  const service = await startServiceProcess({ modelDir, outputDir: path.join(outputDir, 'service') });
  log(`service at ${service.url}; one episode per family with ${label}, each evaluated in fresh processes`);
  const summary = await runPilot({
    episodes,
    service,
    evaluator: Evaluator.open({
      location: { modelDir },
      pristineCacheDir: path.join(outputDir, 'pristine-cache'),
      maxBatch: batch?.maxBatch,
    }),
    taskset: new Taskset({ tokenizer }),
    editor: config,
    editorLabel: label,
    outputDir,
    workers: flags.workers,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'demo', ...flags },
    onStart: (event) => {
      const line = resumeLine(event);
      if (line) log(line);
    },
    onProgress: ({ done, total, attempt, reward, error }) =>
      log(`${done}/${total} ${attempt}: ${error ? `FAILED ${error}` : `reward ${reward?.toFixed(3)}`}`),
  }).finally(service.stop);

  const report = writeReport({
    runs: [path.join(outputDir, 'attempts')],
    editors: [label],
    outputDir: path.join(outputDir, 'report'),
    invocation: { command: 'demo', args: flags },
  });
  log(`report: ${report.html}`);
  const note =
    modelDir === path.resolve(TOY_TARGET_DIR)
      ? "The demo target is the toy (toy/target): a small model that knows only the benchmark's own world. Its rewards show editing at work, not what an editor achieves on Gemma 3."
      : undefined;
  if (note) log(note);
  const document = {
    output_dir: outputDir,
    report_html: report.html,
    results_csv: report.results_csv,
    attempts: summary.attempts.length,
    failed: summary.attempts.filter((a) => a.status === 'failed').length,
    note,
  };
  printResult(flags.json, 'demo', document, {
    wrote: [
      [report.html, 'the scoreboard, with one page per attempt'],
      [report.results_csv, 'one row per attempt'],
      [path.join(outputDir, 'attempts'), 'one folder per attempt: trace, patch, results.json'],
    ],
    figures: [
      attemptsLine(summary.attempts),
      ...summary.attempts.map((attempt) => attemptLine(outputDir, attempt)),
      ...(note ? [note] : []),
    ],
  });
}

/**
 * Each family's first eligible episode on the pristine target (calibration.json, reused when the demo resumes with
 * the same model, seeds and families), or `fallbackSeed` where calibration found none, as its log says.
 */
async function demoEpisodes(
  families: FamilyId[],
  seeds: number,
  fallbackSeed: number,
  modelDir: string,
  outputDir: string,
  log: (m: string) => void,
  batch: BatchLimit | undefined,
): Promise<Calibration['episodes']> {
  if (seeds === 0) return families.map((family) => ({ family, seed: fallbackSeed, params_key: '' }));
  const file = path.join(outputDir, 'calibration.json');
  const args = { command: 'demo', model_dir: modelDir, seeds, families: families.join(',') };
  let calibration = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Calibration) : undefined;
  if (JSON.stringify(calibration?.args) !== JSON.stringify(args)) {
    log(`calibrating on the pristine target (seeds 0…${seeds - 1}, one eligible episode per family)`);
    const tokenizer = await checkpointTokenizer({ modelDir });
    const evaluator = await ItemEvaluator.open({ modelDir }, { device: 'cpu', batch });
    const taskset = new Taskset({ tokenizer });
    calibration = await calibrate({
      evaluator,
      tokenizer,
      taskset,
      seeds,
      eligiblePerFamily: 1,
      families,
      args,
    }).finally(() => evaluator.close());
    writeJsonAtomic(file, calibration);
  } else log(`resumed: calibration kept (${file})`);
  return families.map((family) => {
    const found = calibration!.episodes.find((e) => e.family === family);
    if (!found) log(`${family}: no eligible episode within ${seeds} seeds (see ${file}); running seed ${fallbackSeed}`);
    return found ?? { family, seed: fallbackSeed, params_key: '' };
  });
}
