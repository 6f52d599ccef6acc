// `npx iwibench editor-proxy` as a real process: it prints where it listens, proxies with the key from the
// variable --api-key-env names, and stops on SIGTERM; `main` refuses to start without a key.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { main } from '../../scripts/editor-proxy.ts';
import { CLIENT_KEY, FakeUpstream, UPSTREAM_KEY, sendJson } from './fake-upstream.ts';
import { chatCompletion, chatRequest } from './fixtures.ts';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';

const BIN = fileURLToPath(new URL('../../bin/iwibench.js', import.meta.url));
let upstream: FakeUpstream;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.handler = (_request, res) => sendJson(res, 200, chatCompletion);
});
afterAll(() => upstream.close());

function startCli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, 'editor-proxy', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const printed = new Promise<string>((resolve) =>
    child.stdout.on('data', () => stdout.includes('\n') && resolve(stdout.split('\n')[0])),
  );
  const firstLine = () =>
    Promise.race([
      printed,
      exited.then((code) => {
        throw new Error(`exited with ${code} before printing: ${stderr}`);
      }),
    ]);
  return { child, firstLine, exited, stderr: () => stderr };
}

it('listens, proxies with the key from --api-key-env, and stops on SIGTERM', async () => {
  const cli = startCli(
    ['--port', '0', '--upstream-url', upstream.url, '--api-key-env', 'EDITOR_KEY_FOR_TEST', '--max-retries', '0'],
    { EDITOR_KEY_FOR_TEST: UPSTREAM_KEY },
  );
  const started = JSON.parse(await cli.firstLine());
  expect(started).toMatchObject({
    upstreamUrl: upstream.url,
    bufferChat: false,
    maxRetries: 0,
    timeoutMs: 600000,
    apiKeyEnv: 'EDITOR_KEY_FOR_TEST',
  });
  expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

  const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${started.url}/v1` });
  expect(await client.chat.completions.create(chatRequest as ChatCompletionCreateParamsNonStreaming)).toEqual(
    chatCompletion,
  );
  expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);

  cli.child.kill('SIGTERM');
  expect(await cli.exited).toBe(0);
  expect(cli.stderr()).not.toContain(UPSTREAM_KEY); // the logs never show the key
});

it('refuses to start when the key variable is unset, naming it', async () => {
  delete process.env.EDITOR_KEY_NOT_SET;
  await expect(main(['--port', '0', '--api-key-env', 'EDITOR_KEY_NOT_SET'])).rejects.toThrow(
    'EDITOR_KEY_NOT_SET is not set',
  );
  await expect(main(['--prot', '0'])).rejects.toThrow(/--prot/); // a typo is an error, not a silent default
});
