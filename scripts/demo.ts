// npx iwibench demo [--output-dir runs/demo] [--model-dir DIR] [--editor-model builtin:demo] [--families a,b] [--seed 0]
// The main job end to end on an embedded default, with no GPU, no key and no download: a seeded checkpoint,
// the service, one episode per family with a built-in scripted editor, fresh-process evaluation, and the report.
// Rerunning the same command resumes (completed attempts are kept).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { Checkpoint } from '../service/model/checkpoint.ts';
import { makeTinyCheckpoint } from '../service/model/tiny-checkpoint.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import { runPilot } from '../taskset/pilot.ts';
import { writeReport } from '../taskset/report/index.ts';
import { startServiceProcess } from '../taskset/service-process.ts';
import { FAMILY_IDS } from '../taskset/types.ts';
import { parseFlags } from './args.ts';
import { EDITOR_FLAG_DEFAULTS, editorFromFlags } from './editor-flags.ts';

const defaults = {
  'output-dir': 'runs/demo',
  'model-dir': undefined as string | undefined,
  families: FAMILY_IDS.join(','),
  seed: 0,
  workers: 1,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
  'editor-model': 'builtin:demo',
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const outputDir = path.resolve(flags['output-dir']);
  mkdirSync(outputDir, { recursive: true });
  const started = Date.now();
  const log = (message: string) => process.stderr.write(`demo [${((Date.now() - started) / 1000).toFixed(0)} s] ${message}\n`);

  let modelDir = flags['model-dir'];
  if (!modelDir) {
    modelDir = path.join(outputDir, 'model');
    if (!existsSync(modelDir)) {
      log('making a seeded tiny Gemma 3 checkpoint (random weights, real tokenizer)');
      makeTinyCheckpoint({ out: modelDir, preset: 'tiny', seed: 0 });
    }
  }
  const checkpoint = Checkpoint.open(modelDir);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();

  const families = flags.families.split(',').map((f) => f.trim());
  const unknown = families.filter((f) => !(FAMILY_IDS as readonly string[]).includes(f));
  if (unknown.length > 0) throw new Error(`unknown families: ${unknown.join(', ')}`);
  const { config, label } = editorFromFlags(flags);

  log('starting the service');
  const service = await startServiceProcess({ modelDir, outputDir: path.join(outputDir, 'service') });
  log(`service at ${service.url}; one episode per family with ${label}, each evaluated in fresh processes`);
  const summary = await runPilot({
    episodes: families.map((family) => ({ family: family as (typeof FAMILY_IDS)[number], seed: flags.seed, params_key: '' })),
    service,
    location: { modelDir },
    tokenizer,
    editor: config,
    editorLabel: label,
    outputDir,
    workers: flags.workers,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'demo', ...flags },
    onProgress: ({ done, total, attempt, reward, error }) => log(`${done}/${total} ${attempt}: ${error ? `FAILED ${error}` : `reward ${reward?.toFixed(3)}`}`),
  }).finally(service.stop);

  const report = writeReport({ runs: [path.join(outputDir, 'attempts')], editors: [label], outputDir: path.join(outputDir, 'report'), invocation: { command: 'demo', args: flags } });
  log(`report: ${report.html}`);
  const note = flags['model-dir']
    ? undefined
    : 'The demo target is a random tiny checkpoint with no real capability: its rewards show the pipeline working, not an editor\'s skill.';
  if (note) log(note);
  process.stdout.write(JSON.stringify({ output_dir: outputDir, report_html: report.html, results_csv: report.results_csv, attempts: summary.attempts.length, failed: summary.attempts.filter((a) => a.status === 'failed').length, note }) + '\n');
}
