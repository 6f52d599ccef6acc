// The MMLU-Pro runner's own overhead: questions/s against a fake server that answers instantly, at parallel 1, 8
// and 32, next to two references measured in the same run: the requests/s of a bare HTTP round trip (fetch, same
// body, same server, no runner logic) and of the `openai` client alone. Also the peak RSS with the full test set
// loaded. The server runs in this process, so every figure shares its cost. Each figure is the best of `repeat`
// interleaved tries (the machine may be shared); a runner try includes its fixed per-run file writes.
//
//   npx iwibench bench mmlu-pro
//   npx iwibench bench mmlu-pro --subset 100 --data_dir ~/.cache/huggingface/hub
//
// Prints one JSON object on stdout.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import OpenAI from 'openai';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  resolveConfig,
  examplesByCategory,
  loadDataset,
  resolveDataDir,
  startFakeServer,
  buildPrompt,
  systemPromptFor,
  runMmluPro,
} from '../../mmlu-pro/index.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';
import { parseFlags, parseIntList } from '../args.ts';

// --- flags --------------------------------------------------------------------------------------------------------
const SHARED_DATA = fileURLToPath(new URL('../../../shared/data/mmlu-pro', import.meta.url));
const DEFAULTS = {
  subset: 50, // questions per category per try: 14 × 50 = 700
  parallel: '1,8,32',
  repeat: 3, // tries per figure; the best is reported
  data_dir: existsSync(SHARED_DATA) ? SHARED_DATA : (undefined as string | undefined), // else the Hugging Face cache
};
// -------------------------------------------------------------------------------------------------------------------

const MiB = 1024 * 1024;

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, DEFAULTS);
  const levels = parseIntList(flags.parallel, '--parallel');
  const dataDir = resolveDataDir(flags.data_dir);

  const loadStart = performance.now();
  const dataset = await loadDataset(dataDir, 'en', true);
  const loadSeconds = (performance.now() - loadStart) / 1000;
  const rssAfterLoad = process.memoryUsage().rss;

  const server = await startFakeServer(() => ({ content: "Let's think step by step. The answer is (A)." }), {
    keepRequests: false,
  });
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'mmlu-pro-bench-'));
  // The example config's settings, but without prompts in the result files and with only the runner's own stop.
  const configFor = (parallel: number, outputDir: string, subset: number) =>
    resolveConfig(
      { inference: { stop: [] } },
      {
        url: server.url,
        model: 'bench',
        data_dir: dataDir,
        output_dir: outputDir,
        cot: true,
        parallel,
        subset,
        log_prompt: false,
      },
    );
  try {
    // One typical 5-shot request body, for the bare round trips.
    const question = dataset.test[0]!;
    const prompt = buildPrompt(
      'multi_chat',
      systemPromptFor(configFor(1, scratch, 1).inference.system_prompt, question.category),
      examplesByCategory(dataset.validation).get(question.category)!,
      question,
    );
    if (prompt.kind !== 'chat') throw new Error('expected a chat prompt');
    const maxTokens = configFor(1, scratch, 1).inference.max_tokens;
    const body = JSON.stringify({
      model: 'bench',
      messages: prompt.messages,
      temperature: 0,
      max_tokens: maxTokens,
      stop: ['Question:'],
    });

    const client = new OpenAI({ baseURL: server.url, apiKey: 'bench', maxRetries: 0, timeout: 60_000 });
    const count = flags.subset * 14;
    await runMmluPro(configFor(8, path.join(scratch, 'warm-up'), 5)); // JIT and sockets warm
    const results = [];
    for (const parallel of levels) {
      const best = { bare: 0, sdk: 0, runner: 0 };
      for (let attempt = 0; attempt < flags.repeat; attempt++) {
        best.bare = Math.max(
          best.bare,
          count / (await timed(parallel, count, () => bareRoundTrip(`${server.url}/chat/completions`, body))),
        );
        best.sdk = Math.max(
          best.sdk,
          count /
            (await timed(parallel, count, () =>
              client.chat.completions
                .create({
                  model: 'bench',
                  messages: prompt.messages,
                  temperature: 0,
                  max_tokens: maxTokens,
                  stop: ['Question:'],
                })
                .then(() => {}),
            )),
        );
        const runStart = performance.now();
        const summary = await runMmluPro(
          configFor(parallel, path.join(scratch, `p${parallel}-${attempt}`), flags.subset),
        );
        if (summary.asked !== count)
          throw new Error(`bench: the runner answered ${summary.asked} of ${count} questions`);
        best.runner = Math.max(best.runner, count / ((performance.now() - runStart) / 1000));
      }
      results.push({
        parallel,
        runner_questions_per_s: round(best.runner),
        openai_client_requests_per_s: round(best.sdk),
        bare_fetch_requests_per_s: round(best.bare),
        runner_vs_bare: round(best.runner / best.bare),
      });
    }
    const report = {
      benchmark: 'mmlu-pro runner overhead',
      version: PACKAGE_VERSION,
      node: process.version,
      cpus: os.cpus().length,
      settings: {
        style: 'multi_chat',
        cot: true,
        log_prompt: false,
        scoring: 'original',
        server: 'in-process fake, instant replies',
        questions_per_try: count,
        repeat: flags.repeat,
      },
      data: { dir: dataDir, test_rows: dataset.test.length, load_s: round(loadSeconds) },
      results,
      memory: {
        rss_after_loading_test_set_mib: round(rssAfterLoad / MiB),
        peak_rss_mib: round((process.resourceUsage().maxRSS * 1024) / MiB),
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Seconds to run `request` `count` times with `parallel` in flight. */
async function timed(parallel: number, count: number, request: () => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < count) {
      next += 1;
      await request();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return (performance.now() - start) / 1000;
}

/** One POST through Node's fetch, body read: the least any client can do. */
async function bareRoundTrip(url: string, body: string): Promise<void> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (!response.ok) throw new Error(`bare round trip: HTTP ${response.status}`);
  await response.json();
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
