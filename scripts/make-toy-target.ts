// npx iwibench make-toy-target --out DIR [--seed 0] [--max-steps N]
// Trains the toy target (toy/target.ts): a small Gemma 3 model on the taskset's own world, with its own tokenizer.
// `--out toy/target --seed 0` reproduces the committed one bit for bit; the loss curve is written beside it.
import { SingleBar } from 'cli-progress';
import { makeToyTarget } from '../toy/target.ts';
import { parseFlags } from './args.ts';

const defaults = { out: undefined as string | undefined, seed: 0, 'max-steps': 0 };

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['out'] });
  const bar = new SingleBar({ format: 'training {bar} {value}/{total} steps | loss {loss} | answer-token accuracy {accuracy} | {duration}s', stream: process.stderr, noTTYOutput: true, notTTYSchedule: 10_000 });
  let started = false;
  const record = await makeToyTarget({
    out: flags.out!,
    seed: flags.seed,
    maxSteps: flags['max-steps'] || undefined,
    log: (message) => process.stderr.write(`make-toy-target: ${message}\n`),
    onStep: (step, total) => {
      const payload = { loss: step.loss.toFixed(3), accuracy: step.tokenAccuracy.toFixed(3) };
      if (!started) bar.start(total, 0, payload);
      started = true;
      bar.update(step.step + 1, payload);
    },
  }).finally(() => bar.stop());
  process.stdout.write(JSON.stringify({ out: flags.out, ...record.result, corpus_examples: record.corpus.examples, vocab_size: record.tokenizer.vocab_size }) + '\n');
}
