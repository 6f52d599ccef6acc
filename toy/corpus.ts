// The toy target's training corpus, generated from the taskset: for each family, the first few distinct parameter
// sets (seeds ascending), every terminal item (target, preservation, override) with the answer a capable unedited
// model gives (`pristineAnswer`: the stale fact, the ordinary labels, English, unconstrained length, …), plus the
// episode's general controls, and the prompts of its practice examples with their pristine answers (an editor works
// from those: on a prompt the toy had never seen it would answer something unrelated). So the toy behaves like a
// small instruct model on the benchmark's own world, and calibration finds those parameter sets eligible. Items
// repeated across episodes appear once.
import type { Tokenizer } from '../engine/index.ts';
import { episodeSpec, messagesOf, familyById, FAMILY_IDS, FAMILY_VERSION, type FamilyId } from '../taskset/index.ts';
import type { ChatMessage } from '../core/chat.ts';

/** Distinct parameter sets per family in the corpus: calibration needs three, one more is the margin. */
export const PARAMETER_SETS_PER_FAMILY = 4;

export type CorpusExample = { family: FamilyId | 'controls'; messages: ChatMessage[]; answer: string };

export type Corpus = {
  familyVersion: string;
  /** The seeds whose episodes are in the corpus, per family (duplicated parameter sets are skipped). */
  seeds: Record<FamilyId, number[]>;
  examples: CorpusExample[];
};

/** Seeds of the first `count` distinct parameter sets of a family. */
export function corpusSeeds(family: FamilyId, count = PARAMETER_SETS_PER_FAMILY): number[] {
  const spec = familyById(family);
  const seen = new Set<string>();
  const seeds: number[] = [];
  for (let seed = 0; seeds.length < count; seed++) {
    const { paramsKey } = spec.params(seed);
    if (seen.has(paramsKey)) continue;
    seen.add(paramsKey);
    seeds.push(seed);
  }
  return seeds;
}

/**
 * The corpus, in a fixed order (family by family, items in episode order). `tokenizer` only serves the episode
 * specs' relevant token ids, which the corpus does not use: any Gemma-style tokenizer gives the same corpus.
 */
export function buildCorpus(tokenizer: Tokenizer, count = PARAMETER_SETS_PER_FAMILY): Corpus {
  const seen = new Set<string>();
  const examples: CorpusExample[] = [];
  const add = (family: CorpusExample['family'], messages: ChatMessage[], answer: string) => {
    const key = JSON.stringify(messages);
    if (seen.has(key)) return;
    seen.add(key);
    examples.push({ family, messages, answer });
  };
  const seeds = {} as Record<FamilyId, number[]>;
  for (const family of FAMILY_IDS) {
    seeds[family] = corpusSeeds(family, count);
    for (const seed of seeds[family]) {
      const spec = episodeSpec(family, seed, { tokenizer });
      for (const item of [...spec.terminal.target, ...spec.terminal.preservation, ...spec.terminal.override])
        add(family, item.messages, item.pristineAnswer);
      for (const item of spec.controls) add('controls', item.messages, item.pristineAnswer);
      const open = familyById(family).candidates(seed, 'public');
      const pristineOf = new Map(
        [...open.target, ...open.preservation, ...open.override].map((c) => [
          JSON.stringify(messagesOf(c.prompt)),
          c.pristine,
        ]),
      );
      for (const example of spec.practice)
        add(family, example.messages, pristineOf.get(JSON.stringify(example.messages))!);
    }
  }
  return { familyVersion: FAMILY_VERSION, seeds, examples };
}

/** Every text of the corpus, for training the tokenizer. */
export function corpusTexts(corpus: Corpus): string[] {
  return corpus.examples.flatMap((e) => [...e.messages.map((m) => m.content), e.answer]);
}
