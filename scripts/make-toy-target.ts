// npx iwibench make-toy-target --out DIR [--seed 0] [--max-steps N]
// Trains the toy target (toy/target.ts): a small Gemma 3 model on the taskset's own world, with its own tokenizer.
// `--out toy/target --seed 0` reproduces the committed one bit for bit; the loss curve is written beside it.
import { SingleBar } from 'cli-progress';
import { makeToyTarget } from '../toy/target.ts';
import { defineCommand, parseCommand } from './args.ts';
import { figure, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';

const defaults = { out: undefined as string | undefined, seed: 0, 'max-steps': 0, ...JSON_FLAG_DEFAULTS };

export const command = defineCommand({
  usage: 'make-toy-target',
  description:
    "Trains the toy target (a small Gemma 3 on the taskset's world); --out toy/target --seed 0 reproduces the committed one.",
  examples: ['npx iwibench make-toy-target --out toy/target --seed 0'],
  defaults,
  help: {
    out: 'the folder to write',
    seed: 'the training seed',
    'max-steps': '0: the full schedule; N: stop after N steps',
    ...JSON_FLAG_HELP,
  },
  required: ['out'],
  integers: ['seed', 'max-steps'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const bar = new SingleBar({
    format: 'training {bar} {value}/{total} steps | loss {loss} | answer-token accuracy {accuracy} | {duration}s',
    stream: process.stderr,
    noTTYOutput: true,
    notTTYSchedule: 10_000,
  });
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
  const document = {
    out: flags.out,
    ...record.result,
    corpus_examples: record.corpus.examples,
    vocab_size: record.tokenizer.vocab_size,
  };
  const { steps, seconds, final_loss, final_token_accuracy } = record.result;
  printResult(flags.json, 'make-toy-target', document, {
    wrote: [[flags.out!, 'the toy target: checkpoint, tokenizer, training record and loss curve']],
    figures: [
      `${steps} steps in ${seconds.toFixed(0)} s, final loss ${figure(final_loss)}, answer-token accuracy ${figure(final_token_accuracy)}`,
    ],
  });
}
