// `mmlu-pro rescore DIR --scoring P`: a finished run's saved responses scored again under another profile, without
// asking the server: every record's `pred` is extracted afresh from its `response`, and the result files, summaries,
// report.txt, summary.json and run.json are written to a new folder, as a fresh run under P would write them.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { resolveConfig, type MmluProConfig } from './config.ts';
import type { Category } from './data.ts';
import { extractAnswer } from './extract.ts';
import { ResultStore, writeJsonAtomic, writeResultFile, type ResultRecord } from './results.ts';
import { summarize, type RunInfo, type RunSummary } from './runner.ts';
import type { ScoringProfile } from './score.ts';

/** Rescores `dir` under `scoring` into `outputDir` (default `<dir>-<scoring>`), which must not hold results yet. */
export function rescoreFolder(
  dir: string,
  scoring: ScoringProfile,
  outputDir = `${dir.replace(/[/\\]+$/, '')}-${scoring}`,
): RunSummary {
  const runFile = path.join(dir, 'run.json');
  if (!existsSync(runFile))
    throw new Error(`rescore: ${dir} has no run.json (only folders written by iwibench mmlu-pro can be rescored)`);
  const previous = JSON.parse(readFileSync(runFile, 'utf8')) as RunInfo;
  if (path.resolve(outputDir) === path.resolve(dir))
    throw new Error('rescore: the output folder must differ from the folder rescored');
  if (existsSync(outputDir) && readdirSync(outputDir).length > 0)
    throw new Error(`rescore: ${outputDir} is not empty; pass another --output_dir`);

  // The saved config, with the API key the file leaves out and the new profile.
  const saved = previous.config;
  const config: MmluProConfig = resolveConfig({
    ...saved,
    server: { ...saved.server, api_key: '' },
    test: withoutNulls({ ...saved.test, scoring }),
    log: withoutNulls(saved.log),
  });
  const store = new ResultStore(dir);
  const records = new Map<Category, ResultRecord[]>();
  mkdirSync(outputDir, { recursive: true });
  for (const category of config.test.categories) {
    const rescored = store
      .read(category)
      .map((r) => ({ ...r, pred: extractAnswer(r.response, scoring, config.test.language) }));
    records.set(category, rescored);
    if (rescored.length > 0) writeResultFile(path.join(outputDir, `${category}_result.json`), rescored);
  }
  const run: RunInfo = {
    ...previous,
    started_at: new Date().toISOString(),
    config: { ...previous.config, test: { ...previous.config.test, scoring } },
    settings: { ...previous.settings, scoring },
    rescored_from: dir,
  };
  writeJsonAtomic(path.join(outputDir, 'run.json'), run);
  const answered = [...records.values()].reduce((n, r) => n + r.length, 0);
  const seconds = { categories: [...records.keys()].map(() => 0), total: 0 }; // nothing was asked
  return summarize({ config, records, failed: [], tokens: null, seconds, asked: 0, skipped: answered, outputDir, run });
}

/** run.json writes unset settings as null; the config reader wants them left out. */
function withoutNulls<T extends object>(section: T): Partial<T> {
  return Object.fromEntries(Object.entries(section).filter(([, v]) => v !== null)) as Partial<T>;
}
