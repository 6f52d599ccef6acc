// npx iwibench check --family lexical_inhibition --seed 3 --item target-05 --response "People in Tunisia officially speak Arabic."
// echo "The official language of Tunisia is Arabic." | npx iwibench check --family lexical_inhibition --seed 3 --item target-05 --response -
// Prints the verdict of one graded item (terminal item or general control) for a response, exactly as scoring
// computes it: the check as data, behaviour, content, passed (= behaviour && content) and a readable detail.
import { readFileSync } from 'node:fs';
import { PACKAGE_VERSION } from '../core/version.ts';
import { passes, runCheck, episodeSpecFromArgs, itemById, gemma3Tokenizer, FAMILY_VERSION } from '../taskset/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { familyProblems } from './family-flags.ts';

const defaults = {
  family: undefined as string | undefined,
  seed: undefined as number | undefined,
  'control-seed': undefined as number | undefined, // default: the episode seed (controls depend on it)
  item: undefined as string | undefined,
  response: undefined as string | undefined, // "-" reads the response from stdin
};

export const command = defineCommand({
  usage: 'check',
  description:
    'The verdict of one graded item (terminal item or general control) for a response, exactly as scoring computes it.',
  examples: [
    'npx iwibench check --family lexical_inhibition --seed 3 --item target-05 --response "People in Tunisia officially speak Arabic."',
  ],
  defaults,
  help: {
    family: 'the task family',
    seed: 'the episode seed',
    'control-seed': 'seed of the general controls; default: the episode seed',
    item: 'the item id, e.g. target-05, preservation-02, control-17',
    response: 'the response to check; "-" reads it from stdin',
  },
  required: ['family', 'seed', 'item', 'response'],
  integers: ['seed', 'control-seed'],
  check: (flags) => familyProblems(flags.family),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const response = flags.response === '-' ? readFileSync(0, 'utf8').replace(/\n$/, '') : flags.response!;
  const seed = flags.seed!;
  const controlSeed = flags['control-seed'];
  const spec = await episodeSpecFromArgs(flags.family!, seed, controlSeed, gemma3Tokenizer);
  const item = itemById(spec, flags.item!);
  const verdict = runCheck(item.check, response);
  const output = {
    command: 'check',
    packageVersion: PACKAGE_VERSION,
    familyVersion: FAMILY_VERSION,
    arguments: { family: spec.family, seed, controlSeed: spec.controlSeed, item: item.id, response },
    item: { id: item.id, kind: item.kind, messages: item.messages, check: item.check },
    verdict: { ...verdict, passed: passes(verdict) },
  };
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
}
