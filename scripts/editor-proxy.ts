// `npx iwibench editor-proxy`: the transport proxy between the harness and the editor's API (editor-proxy/README.md).
//
//   OPENAI_API_KEY=sk-... npx iwibench editor-proxy --port 8770
//   npx iwibench editor-proxy --port 8770 --buffer-chat --upstream-url https://openrouter.ai/api/v1/chat/completions --api-key-env OPENROUTER_API_KEY
//
// Prints `{"url": ...}` and the resolved settings as one JSON line on stdout, logs (pino) on stderr, and runs until
// SIGINT or SIGTERM.
import { buildProxy, PROXY_DEFAULTS, upstreamBaseUrl } from '../editor-proxy/index.ts';
import { defineCommand, parseCommand } from './args.ts';

const defaults = {
  port: 8770,
  host: '127.0.0.1', // loopback: the proxy spends the key on behalf of anyone who can reach it
  'upstream-url': PROXY_DEFAULTS.upstreamUrl as string,
  'buffer-chat': PROXY_DEFAULTS.bufferChat as boolean,
  'timeout-ms': PROXY_DEFAULTS.timeoutMs as number, // longest silence from the upstream, ms
  'max-retries': PROXY_DEFAULTS.maxRetries as number,
  'api-key-env': 'OPENAI_API_KEY', // the variable that holds the upstream's key
};

export const command = defineCommand({
  usage: 'editor-proxy',
  description:
    "The transport proxy between the harness and the editor's API, with its own key; runs until SIGINT or SIGTERM.",
  examples: [
    'npx iwibench editor-proxy --port 8770',
    'npx iwibench editor-proxy --buffer-chat --upstream-url https://openrouter.ai/api/v1/chat/completions --api-key-env OPENROUTER_API_KEY',
  ],
  defaults,
  help: {
    port: 'port to listen on',
    host: 'address to listen on (loopback: the proxy spends the key for anyone who can reach it)',
    'upstream-url': 'the upstream base URL, or its full /v1/chat/completions (or /v1/responses) endpoint',
    'buffer-chat': 'stream chat completions from the upstream and answer with one reassembled completion',
    'timeout-ms': 'longest silence from the upstream, ms',
    'max-retries': 'retries on 429/5xx and connection failures',
    'api-key-env': "the variable that holds the upstream's key",
  },
  integers: ['port', 'timeout-ms', 'max-retries'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const apiKey = process.env[flags['api-key-env']];
  if (!apiKey)
    throw new Error(
      `${flags['api-key-env']} is not set: the proxy needs the upstream's API key (pick the variable with --api-key-env)`,
    );

  const app = buildProxy({
    upstreamUrl: flags['upstream-url'],
    apiKey,
    bufferChat: flags['buffer-chat'],
    timeoutMs: flags['timeout-ms'],
    maxRetries: flags['max-retries'],
    logger: { level: 'info', stream: process.stderr },
  });
  const url = await app.listen({ port: flags.port, host: flags.host });
  const settings = {
    upstreamUrl: upstreamBaseUrl(flags['upstream-url']),
    bufferChat: flags['buffer-chat'],
    timeoutMs: flags['timeout-ms'],
    maxRetries: flags['max-retries'],
    apiKeyEnv: flags['api-key-env'],
  };
  process.stdout.write(JSON.stringify({ url, ...settings }) + '\n');

  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await app.close();
}
