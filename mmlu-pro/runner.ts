// One MMLU-Pro run: load the data, skip what the output folder already answers, ask the rest category by category
// (as the original) with `parallel` requests in flight, extract and score, then write summaries and the report.
// See mmlu-pro/README.md.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_VERSION } from '../core/version.ts';
import { createCompletionClient, FatalServerError, type Usage } from './client.ts';
import { outputFolder, type MmluProConfig } from './config.ts';
import {
  examplesByCategory,
  loadDataset,
  resolveDataDir,
  selectQuestions,
  type Category,
  type DataFile,
  type Question,
} from './data.ts';
import { extractAnswer } from './extract.ts';
import { buildPrompt, systemPromptFor } from './prompts.ts';
import {
  categoryScore,
  markdownTable,
  overallScore,
  reportText,
  tokenStats,
  type CategoryScore,
  type FailedQuestion,
  type TokenStats,
} from './report.ts';
import { pythonJson } from './python.ts';
import { questionKey, ResultStore, writeFileAtomic, writeJsonAtomic, type ResultRecord } from './results.ts';
import { categorySummary, scoreOne, tally, type Rates, type ScoringProfile, type Tally } from './score.ts';

/** What a run reports; printed as JSON by the CLI and saved as summary.json. */
export type RunSummary = {
  model: string;
  /** The scoring profile that made every number here (score.ts SCORING_PROFILES). */
  scoring: ScoringProfile;
  output_dir: string;
  overall: Tally & Rates;
  categories: CategoryScore[];
  failed: FailedQuestion[];
  tokens: TokenStats | null;
  /** Questions answered by this run, and questions skipped because the folder already had them. */
  asked: number;
  skipped: number;
  markdown_table: string;
  /** report.txt's text. */
  report: string;
  run: RunInfo;
};

/** Provenance written into run.json and every summary file. */
export type RunInfo = {
  tool: 'iwibench mmlu-pro';
  version: string;
  argv: string[];
  started_at: string;
  data_dir: string;
  data: { test: DataFile[]; validation: DataFile[] };
  /** The resolved config, API key left out. */
  config: Omit<MmluProConfig, 'server'> & { server: Omit<MmluProConfig['server'], 'api_key'> };
  /** What changes the answers; a folder resumes only a run with the same settings. */
  settings: Record<string, unknown>;
  /** Set by `mmlu-pro rescore`: the folder whose saved responses were scored again. */
  rescored_from?: string;
};

export type RunEvents = {
  /** Once, before the first request. */
  start?: (info: { toAsk: number; skipped: number }) => void;
  /** After each question, answered or failed. */
  progress?: (done: number, toAsk: number) => void;
  /** Messages for people (stderr in the CLI), by verbosity. */
  log?: (message: string) => void;
};

export type RunOptions = { argv?: string[]; events?: RunEvents };

export async function runMmluPro(config: MmluProConfig, options: RunOptions = {}): Promise<RunSummary> {
  const log = options.events?.log ?? (() => {});
  const dataDir = resolveDataDir(config.test.data_dir ?? undefined);
  const dataset = await loadDataset(dataDir, config.test.language, config.test.cot);
  const selected = selectQuestions(dataset.test, config.test.categories, config.test.subset ?? undefined);
  const examples = examplesByCategory(dataset.validation);
  if (config.test.cot) {
    const missing = config.test.categories.filter((c) => (examples.get(c) ?? []).length === 0);
    if (missing.length > 0)
      throw new Error(
        `no CoT examples for ${missing.join(', ')} in ${dataset.files.validation.map((f) => f.path).join(', ')}`,
      );
  }

  const outputDir = config.log.output_dir ?? outputFolder(config);
  const run: RunInfo = {
    tool: 'iwibench mmlu-pro',
    version: PACKAGE_VERSION,
    argv: options.argv ?? [],
    started_at: new Date().toISOString(),
    data_dir: dataDir,
    data: dataset.files,
    config: withoutApiKey(config),
    settings: answerSettings(config, dataset.files),
  };
  checkResumable(outputDir, run.settings);
  mkdirSync(outputDir, { recursive: true });
  writeJsonAtomic(path.join(outputDir, 'run.json'), run);

  const store = new ResultStore(outputDir, log);
  const todo = new Map<Category, Question[]>();
  let skipped = 0;
  for (const [category, questions] of selected) {
    const alreadyAnswered = store.recover(category);
    todo.set(
      category,
      questions.filter((q) => !alreadyAnswered.has(questionKey(q))),
    );
    skipped += questions.length - todo.get(category)!.length;
  }
  const toAskCount = selected.size === 0 ? 0 : [...todo.values()].reduce((n, q) => n + q.length, 0);
  if (config.log.verbosity >= 1 && skipped > 0) log(`skipping ${skipped} questions already answered in ${outputDir}`);
  options.events?.start?.({ toAsk: toAskCount, skipped });

  const client = createCompletionClient(config);
  const failed: FailedQuestion[] = [];
  const usages: Usage[] = [];
  const started = performance.now();
  let answered = 0;

  async function ask(question: Question): Promise<void> {
    const category = question.category;
    const prompt = buildPrompt(
      config.inference.style,
      systemPromptFor(config.inference.system_prompt, category),
      config.test.cot ? (examples.get(category) ?? []) : [],
      question,
      config.test.language,
    );
    const result = await client.complete(prompt);
    if (!result.ok) {
      failed.push({ question_id: question.question_id, category, ...result.failure });
      log(`question ${question.question_id} (${category}) failed: ${result.failure.kind}: ${result.failure.message}`);
      return;
    }
    const pred = extractAnswer(result.text, config.test.scoring, config.test.language);
    const logged = config.log.log_prompt ? { prompt: prompt.kind === 'chat' ? prompt.messages : prompt.text } : {};
    const record: ResultRecord = { ...question, ...logged, response: result.text, pred };
    store.append(record);
    answered += 1;
    if (result.usage) usages.push(result.usage);
    if (config.log.verbosity >= 1 && pred === null)
      log(`no answer found in the response to question ${question.question_id} (${category})`);
    if (config.log.verbosity >= 2) {
      const { correct } = scoreOne(record, config.test.scoring);
      log(
        JSON.stringify({
          id: question.question_id,
          question: question.question,
          response: result.text,
          pred,
          answer: question.answer,
          correct,
        }),
      );
    }
  }

  // Per category, `parallel` workers share one queue. The first error stops them all taking more work; a
  // FatalServerError is the server's fault, anything else a bug. Either way the answers so far are written first.
  const stop: { error: unknown } = { error: null };
  let done = 0;
  const categorySeconds: number[] = [];
  for (const [category, toAsk] of todo) {
    const categoryStarted = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (stop.error === null && next < toAsk.length) {
        try {
          await ask(toAsk[next++]!);
        } catch (error) {
          stop.error ??= error;
        }
        options.events?.progress?.(++done, toAskCount);
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.test.parallel, toAsk.length) }, worker));
    store.finalize(category);
    categorySeconds.push((performance.now() - categoryStarted) / 1000);
  }
  const seconds = (performance.now() - started) / 1000;

  const records = new Map([...selected.keys()].map((category) => [category, store.read(category)]));
  const summary = summarize({
    config,
    records,
    failed,
    tokens: tokenStats(usages, seconds),
    seconds: { categories: categorySeconds, total: seconds },
    asked: answered,
    skipped,
    outputDir,
    run,
  });
  if (stop.error instanceof FatalServerError) {
    throw new FatalServerError(
      `${stop.error.message}\nanswers so far are saved in ${outputDir}; rerun the same command to resume`,
    );
  }
  if (stop.error !== null) throw stop.error;
  return summary;
}

/**
 * Per-category summaries and report.txt (the original's bytes), and summary.json (ours) from the answered records.
 * `seconds`: each category's wall time and the whole run's, for report.txt.
 */
export function summarize(input: {
  config: MmluProConfig;
  records: Map<Category, ResultRecord[]>;
  failed: FailedQuestion[];
  tokens: TokenStats | null;
  seconds: { categories: number[]; total: number };
  asked: number;
  skipped: number;
  outputDir: string;
  run: RunInfo;
}): RunSummary {
  const { config, failed, outputDir, run } = input;
  const scoring = config.test.scoring;
  const categories = [...input.records].map(([category, records]) => categoryScore(category, tally(records, scoring)));
  for (const score of categories)
    writeFileAtomic(
      path.join(outputDir, `${score.category}_summary.json`),
      pythonJson(categorySummary(score.category, score, scoring), true),
    );
  const report = reportText({ categories, profile: scoring, seconds: input.seconds, tokens: input.tokens });
  writeFileAtomic(path.join(outputDir, 'report.txt'), report);
  const summary: RunSummary = {
    model: config.server.model,
    scoring,
    output_dir: outputDir,
    overall: overallScore(categories),
    categories,
    failed,
    tokens: input.tokens,
    asked: input.asked,
    skipped: input.skipped,
    markdown_table: markdownTable(categories, scoring),
    report,
    run,
  };
  writeJsonAtomic(path.join(outputDir, 'summary.json'), summary);
  return summary;
}

/**
 * The settings that decide the answers (and the stored `pred`, hence the scoring profile). The URL counts: the same
 * model name served pristine and patched must not share a folder. Categories, subset, parallelism, timeouts and
 * logging do not.
 */
function answerSettings(config: MmluProConfig, files: RunInfo['data']): Record<string, unknown> {
  return {
    url: config.server.url,
    model: config.server.model,
    style: config.inference.style,
    cot: config.test.cot,
    scoring: config.test.scoring,
    language: config.test.language,
    system_prompt: config.inference.system_prompt,
    temperature: config.inference.temperature,
    top_p: config.inference.top_p,
    max_tokens: config.inference.max_tokens,
    stop: config.inference.stop,
    stop_at_question: config.inference.stop_at_question,
    test_sha256: files.test.map((f) => f.sha256),
    validation_sha256: files.validation.map((f) => f.sha256),
  };
}

function withoutApiKey(config: MmluProConfig): RunInfo['config'] {
  const { api_key: _secret, ...server } = config.server;
  return { ...config, server };
}

/** A folder resumes only a run with the same answer settings; otherwise say what differs and change nothing. */
function checkResumable(outputDir: string, settings: Record<string, unknown>): void {
  const file = path.join(outputDir, 'run.json');
  if (!existsSync(file)) return;
  let previous: Record<string, unknown>;
  try {
    previous = (JSON.parse(readFileSync(file, 'utf8')) as RunInfo).settings ?? {};
  } catch {
    throw new Error(`${file} is not valid JSON; move the folder away or pass another --output_dir`);
  }
  const keys = new Set([...Object.keys(previous), ...Object.keys(settings)]);
  const changed = [...keys].filter((k) => JSON.stringify(previous[k]) !== JSON.stringify(settings[k]));
  if (changed.length > 0) {
    const lines = changed.map((k) => `${k}: ${JSON.stringify(previous[k])} → ${JSON.stringify(settings[k])}`);
    throw new Error(
      `${outputDir} holds answers from a run with other settings (${lines.join('; ')}); pass another --output_dir or move it away`,
    );
  }
}
