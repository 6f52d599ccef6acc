// Before any episode: something must answer where an API editor's requests go when that is this machine (the editor
// proxy by default). Without this, a runner started before its proxy would create an episode and fail at the
// first request.
import net from 'node:net';
import { editorKind, isLocalApi, type EditorConfig } from './config.ts';

const CONNECT_TIMEOUT_MS = 3000;

/** Throws one line saying how to start the proxy, or what else to pass, when nothing listens at a local base URL. */
export async function checkEditorEndpoint(config: EditorConfig): Promise<void> {
  if (editorKind(config.model) !== 'api' || !isLocalApi(config.baseUrl)) return;
  const url = new URL(config.baseUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const failure = await connectFailure(url.hostname.replace(/^\[|\]$/g, ''), port);
  if (failure !== undefined)
    throw new Error(
      `nothing answers at ${config.baseUrl} (${failure}): start \`npx iwibench editor-proxy --port 8770\` with the editor's key in its environment (OPENAI_API_KEY), or pass --editor-base-url`,
    );
}

/** Why a TCP connection to host:port fails, or undefined when it opens. */
function connectFailure(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (failure: string | undefined) => {
      socket.destroy();
      resolve(failure);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => done(`no answer in ${CONNECT_TIMEOUT_MS / 1000} s`));
    socket.once('connect', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
  });
}
