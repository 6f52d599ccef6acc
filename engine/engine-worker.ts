// The engine's worker thread (engine-host.ts): runs Gemma3Engine calls off the service's event loop. Weights arrive
// with each call as BF16 arrays over SharedArrayBuffers (the store's own memory: nothing is copied); hooks go back to
// the host as messages, and a stop rule is answered synchronously through a shared flag.
import { parentPort, workerData } from 'node:worker_threads';
import { Checkpoint } from './checkpoint.ts';
import { Gemma3Engine, type CallControl } from './runtime.ts';
import type { CallMessage, HostReply, WorkerInit, WorkerMessage } from './engine-host.ts';

const init = workerData as WorkerInit;
const port = parentPort!;
const checkpoint = Checkpoint.open({ modelDir: init.dir });
const engine = await Gemma3Engine.create({
  checkpoint,
  threads: init.threads,
  chunkRows: init.chunkRows,
  device: init.device,
  precision: init.precision,
  source: {
    bf16: (name) => {
      throw new Error(`no weights given for "${name}"`);
    },
  },
});
const resumes = new Map<number, (abort: boolean) => void>();

const send = (message: WorkerMessage, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

port.on('message', (message: HostReply | CallMessage) => {
  if (message.type === 'resume') resumes.get(message.id)?.(message.abort);
  else if (message.type === 'call') void call(message);
  else if (message.type === 'close') void engine.close().then(() => (checkpoint.close(), port.close()));
});
send({ type: 'ready' });

async function call(message: CallMessage): Promise<void> {
  const { id, method, args, hooks } = message;
  const stable = new Set(message.stable);
  const weights = {
    bf16: (name: string) => message.weights[name] ?? missing(name),
    stable: (name: string) => stable.has(name),
  };
  const control: CallControl = {
    between: () =>
      new Promise<void>((resolve, reject) => {
        resumes.set(
          id,
          (abort) => (
            resumes.delete(id),
            abort ? reject(new DOMException('the request was cancelled', 'AbortError')) : resolve()
          ),
        );
        send({ type: 'between', id });
      }),
  };
  try {
    let value: unknown;
    if (method === 'generate') {
      const flag = new Int32Array(message.flag);
      value = await engine.generate(args.prompts, {
        ...control,
        maxNewTokens: args.maxNewTokens,
        weights,
        ...(hooks.onToken
          ? { onToken: (index: number, token: number) => send({ type: 'token', id, index, token }) }
          : {}),
        ...(hooks.onLogits
          ? {
              onLogits: (index: number, logits: Float32Array) =>
                send({ type: 'logits', id, index, logits: logits.slice() }),
            }
          : {}),
        ...(hooks.stopWhen
          ? {
              stopWhen: (index: number, outputIds: readonly number[]) => {
                Atomics.store(flag, 0, 0);
                send({ type: 'stop?', id, index, outputIds: [...outputIds] });
                Atomics.wait(flag, 0, 0); // the host answers 1 (go on) or 2 (stop)
                return Atomics.load(flag, 0) === 2;
              },
            }
          : {}),
      });
    } else if (method === 'inspect') {
      value = await engine.inspect(args.requests, { ...control, layers: args.layers, topK: args.topK, weights });
    } else {
      value = await engine.logits(args.ids, { ...control, chunk: args.chunk, weights });
    }
    send({ type: 'result', id, value });
  } catch (error) {
    const e = error as Error;
    send({
      type: 'error',
      id,
      name: e.name,
      message: e.message,
      ...((e as { code?: string }).code ? { code: (e as { code?: string }).code } : {}),
    });
  }
}

function missing(name: string): never {
  throw new Error(`the call gave no weights for "${name}"`);
}
