// npx iwibench episode --family local_factual_update --seed 7
// npx iwibench episode --family lexical_inhibition --seed 3 --control-seed 11 --view editor
// Prints an episode spec as JSON, for audits: the admin view (everything graded: terminal items with their checks,
// and the general controls) or the editor view (what the editor is shown: objective, relevant token ids, practice).
import { PACKAGE_VERSION } from '../core/version.ts';
import { editorView, episodeSpecFromArgs, gemma3Tokenizer, FAMILY_VERSION } from '../taskset/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { familyProblems } from './family-flags.ts';

const defaults = {
  family: undefined as string | undefined,
  seed: undefined as number | undefined,
  'control-seed': undefined as number | undefined, // default: the episode seed
  view: 'admin', // admin | editor
};

export const command = defineCommand({
  usage: 'episode',
  description:
    'An episode spec as JSON: the admin view (everything graded) or the editor view (what the editor is shown).',
  examples: ['npx iwibench episode --family lexical_inhibition --seed 3 --control-seed 11 --view editor'],
  defaults,
  help: {
    family: 'the task family',
    seed: 'the episode seed',
    'control-seed': 'seed of the general controls; default: the episode seed',
    view: 'admin: terminal items with their checks and the controls; editor: objective, relevant token ids, practice',
  },
  required: ['family', 'seed'],
  integers: ['seed', 'control-seed'],
  choices: { view: ['admin', 'editor'] },
  check: (flags) => familyProblems(flags.family),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const seed = flags.seed!;
  const controlSeed = flags['control-seed'];
  const spec = await episodeSpecFromArgs(flags.family!, seed, controlSeed, gemma3Tokenizer);
  const output = {
    command: 'episode',
    packageVersion: PACKAGE_VERSION,
    familyVersion: FAMILY_VERSION,
    arguments: { family: flags.family, seed, controlSeed: spec.controlSeed, view: flags.view },
    episode: flags.view === 'editor' ? editorView(spec) : spec,
  };
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
}
