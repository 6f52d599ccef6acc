// npx iwibench bench service [--preset tiny] [--calls 400] [--skip-worst-call]
// Tool-call overhead (read_weights of a small slice) over loopback, p50/p99, against a bare Fastify route measured in
// the same run; run_target throughput with two concurrent episodes against one; and the worst call the default
// budgets admit (run_target: 8 prompts of ~4,095 tokens, compare_base): its duration and peak added memory, and the
// latency of GET /health and of another episode's read_weights while it runs.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { buildApp } from '../../service/app.ts';
import { makeTinyCheckpoint, type Preset, PRESETS } from '../../engine/index.ts';
import { Target } from '../../service/target.ts';
import { parseFlags } from '../args.ts';
import { benchHeader } from './header.ts';

const defaults = {
  preset: 'tiny',
  'model-dir': undefined as string | undefined,
  calls: 400,
  'run-calls': 4,
  'skip-worst-call': false,
};

const TOKENS = { admin: 'bench-admin', editor: 'bench-editor' };

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** Sequential round trips to `url`, in ms; the first 10% are warm-up and not counted. */
async function latencies(
  url: string,
  init: RequestInit,
  calls: number,
): Promise<{ p50: number; p99: number; mean: number }> {
  const times: number[] = [];
  for (let i = 0; i < calls * 1.1; i++) {
    const start = performance.now();
    const response = await fetch(url, init);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    if (i >= calls * 0.1) times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    mean: times.reduce((a, b) => a + b, 0) / times.length,
  };
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  if (!PRESETS.includes(flags.preset as Preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
  const dir = flags['model-dir'] ?? path.join(os.tmpdir(), `iwibench-bench-${flags.preset}`);
  if (!flags['model-dir'] && !existsSync(dir))
    makeTinyCheckpoint({ out: dir, preset: flags.preset as Preset, seed: 0 });

  // Reference: a bare Fastify route returning a small JSON body, same process, same loopback.
  const bare = Fastify();
  bare.post('/bare', async () => ({ result: { values: [0.1, 0.2, 0.3, 0.4] } }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const target = await Target.load({ modelDir: dir });
  const { app } = await buildApp({
    target,
    outputDir: mkdtempSync(path.join(os.tmpdir(), 'iwibench-bench-svc-')),
    tokens: TOKENS,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const admin = { authorization: `Bearer ${TOKENS.admin}`, 'content-type': 'application/json' };
  const episode = async () => {
    const response = await fetch(`${url}/episodes`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({
        family: 'bench',
        seed: 0,
        objective: 'bench',
        relevant_token_ids: [],
        practice: [],
        budgets: {
          tool_calls: 1_000_000,
          run_target_calls: 1000,
          run_target_sequence_evaluations: 100_000,
          forward_tokens: 100_000_000,
        },
      }),
    });
    const { id, episode_key } = (await response.json()) as { id: string; episode_key: string };
    return {
      id,
      headers: {
        authorization: `Bearer ${TOKENS.editor}`,
        'x-episode-key': episode_key,
        'content-type': 'application/json',
      },
    };
  };
  const e1 = await episode();
  const e2 = await episode();
  const norm = `${target.checkpoint.config.tensor_prefix}norm.weight`;
  const read = JSON.stringify({ op: 'slice', tensor: norm, slice: [[0, 4]] });

  const bareLatency = await latencies(
    `${bareUrl}/bare`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: read },
    flags.calls,
  );
  const toolLatency = await latencies(
    `${url}/episodes/${e1.id}/tools/read_weights`,
    { method: 'POST', headers: e1.headers, body: read },
    flags.calls,
  );

  const run = JSON.stringify({
    sequences: Array.from({ length: 4 }, (_, i) => ({
      messages: [{ role: 'user', content: `Write a sentence about the number ${i}.` }],
    })),
    max_new_tokens: 16,
  });
  const runOnce = async (e: { id: string; headers: Record<string, string> }) => {
    const response = await fetch(`${url}/episodes/${e.id}/tools/run_target`, {
      method: 'POST',
      headers: e.headers,
      body: run,
    });
    const body = (await response.json()) as { result: { forward_tokens: number } };
    return body.result.forward_tokens;
  };
  await runOnce(e1); // warm-up
  const throughput = async (episodes: (typeof e1)[]) => {
    const start = performance.now();
    const tokens = await Promise.all(
      episodes.map(async (e) => {
        let sum = 0;
        for (let i = 0; i < flags['run-calls']; i++) sum += await runOnce(e);
        return sum;
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    return {
      calls: episodes.length * flags['run-calls'],
      seconds,
      calls_per_second: (episodes.length * flags['run-calls']) / seconds,
      forward_tokens_per_second: tokens.reduce((a, b) => a + b, 0) / seconds,
    };
  };
  const one = await throughput([e1]);
  const two = await throughput([e1, e2]);
  const worst = flags['skip-worst-call'] ? null : await worstCall(url, admin, e2, read, target);
  await app.close();
  await target.close();
  await bare.close();
  process.stdout.write(
    JSON.stringify(
      {
        ...benchHeader('service', { ...flags, 'model-dir': dir }),
        model: target.modelId,
        read_weights_ms: toolLatency,
        bare_route_ms: bareLatency,
        overhead_ratio_p50: toolLatency.p50 / bareLatency.p50,
        run_target: {
          one_episode: one,
          two_episodes: two,
          throughput_ratio: two.calls_per_second / one.calls_per_second,
        },
        worst_call: worst,
      },
      null,
      2,
    ) + '\n',
  );
}

function statusBytes(field: 'VmHWM' | 'VmRSS'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

/** A raw prompt of about `tokens` tokens (BOS included). */
function promptOf(target: Target, tokens: number, salt: number): string {
  let words = tokens;
  for (;;) {
    const text = Array.from({ length: words }, (_, i) => `w${(i * 7919 + salt) % 5000}`).join(' ');
    const n = target.tokenizer.encode(text).length;
    if (n <= tokens) return text;
    words = Math.floor(words * (tokens / n)) - 1;
  }
}

/** The worst in-budget call of a fresh episode with default budgets, and what other clients see meanwhile. */
async function worstCall(
  url: string,
  admin: Record<string, string>,
  other: { id: string; headers: Record<string, string> },
  read: string,
  target: Target,
) {
  const created = await fetch(`${url}/episodes`, {
    method: 'POST',
    headers: admin,
    body: JSON.stringify({ family: 'bench', seed: 1, objective: 'bench', relevant_token_ids: [], practice: [] }),
  });
  const { id, episode_key } = (await created.json()) as { id: string; episode_key: string };
  const headers = {
    authorization: `Bearer ${TOKENS.editor}`,
    'x-episode-key': episode_key,
    'content-type': 'application/json',
  };
  const body = JSON.stringify({
    sequences: Array.from({ length: 8 }, (_, i) => ({ prompt: promptOf(target, 4095, i) })),
    max_new_tokens: 1,
    compare_base: true,
  });
  const health: number[] = [];
  const reads: number[] = [];
  let running = true;
  const probe = async (samples: number[], go: () => Promise<Response>) => {
    while (running) {
      const start = performance.now();
      const response = await go();
      await response.arrayBuffer();
      if (running) samples.push(performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  writeFileSync('/proc/self/clear_refs', '5'); // peak RSS from here
  const rssBefore = statusBytes('VmRSS');
  const start = performance.now();
  const call = fetch(`${url}/episodes/${id}/tools/run_target`, { method: 'POST', headers, body }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as { result?: { forward_tokens: number }; code?: string; message?: string },
  }));
  const probes = [
    probe(health, () => fetch(`${url}/health`)),
    probe(reads, () =>
      fetch(`${url}/episodes/${other.id}/tools/read_weights`, { method: 'POST', headers: other.headers, body: read }),
    ),
  ];
  const result = await call;
  const seconds = (performance.now() - start) / 1000;
  running = false;
  await Promise.all(probes);
  const summary = (samples: number[]) => {
    const sorted = [...samples].sort((a, b) => a - b);
    return {
      n: sorted.length,
      p50_ms: percentile(sorted, 0.5),
      p99_ms: percentile(sorted, 0.99),
      max_ms: sorted.at(-1),
    };
  };
  // At the 1B shape the call outlasts the per-call time limit: then it is stopped (CALL_TIME_LIMIT), as designed.
  if (result.status !== 200 && result.body.code !== 'CALL_TIME_LIMIT')
    throw new Error(`the worst call answered ${result.status}: ${result.body.message}`);
  return {
    call: 'run_target 8 × ~4095 tokens, max_new_tokens 1, compare_base',
    outcome: result.status === 200 ? 'completed' : `stopped: ${result.body.message}`,
    forward_tokens: result.body.result?.forward_tokens ?? null,
    seconds,
    peak_added_rss_mib: (statusBytes('VmHWM') - rssBefore) / 2 ** 20,
    health_during: summary(health),
    other_episode_read_weights_during: summary(reads),
  };
}
