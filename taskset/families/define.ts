// Shared machinery of the families. A family module declares its parameter draw, objective, relevant strings and,
// per split, its candidate items; `defineFamily` turns that into a deterministic episode: parameters from the seed,
// practice from the public side, terminal items from the terminal side, each part from its own random sub-stream.
import type { Tokenizer } from '../../engine/index.ts';
import { readData } from '../data.ts';
import { Rng } from '../../core/random.ts';
import { onSide, type Split } from '../split.ts';
import type { Check, EpisodeSpec, FamilyId, Item, Modulation, Objective, PracticeExample } from '../types.ts';
import type { ChatMessage } from '../../core/chat.ts';
import { FAMILY_VERSION } from '../types.ts';

/** Default sizes of an episode (families.md). */
export const EPISODE_SIZES = { target: 24, preservation: 24, override: 8, practice: 8, controls: 64 } as const;

/** How the 8 practice examples are made up: mostly the requested behaviour, one example of each kept behaviour. */
const PRACTICE_MIX = { target: 6, preservation: 1, override: 1 } as const;

/** One possible item before the draw. `stratum` balances sub-kinds; `subject` spreads draws over subjects. */
export type Candidate = {
  prompt: string | ChatMessage[];
  check: Check;
  pristine: string;
  edited?: string;
  maxNewTokens: number;
  stratum?: string;
  subject?: string;
};

export type CandidateSets = { target: Candidate[]; preservation: Candidate[]; override: Candidate[] };

export type FamilyDefinition<P extends Record<string, unknown>> = {
  id: FamilyId;
  title: string;
  modulation: Modulation;
  draw(rng: Rng): P;
  /** A short readable key that is equal exactly when the parameters are equal. */
  key(params: P): string;
  objective(params: P): Objective;
  /** Strings whose token ids the edit is about (each is tokenised with and without a leading space). */
  relevantStrings(params: P): string[];
  candidates(params: P, split: Split): CandidateSets;
  /** Answers the general controls must not ask for, because the edit changes them on purpose. */
  controlExclusions?(params: P): string[];
};

/** What a family contributes to an episode spec (episode.ts adds the seeds and the general controls). */
export type FamilyEpisode = Pick<
  EpisodeSpec,
  'paramsKey' | 'params' | 'objective' | 'relevantTokenIds' | 'practice' | 'terminal'
> & {
  controlExclusions: string[];
};

export type FamilySpec = {
  id: FamilyId;
  title: string;
  modulation: Modulation;
  /** The parameter set of a seed, without building items (cheap: calibration counts distinct sets). */
  params(seed: number): { params: Record<string, unknown>; paramsKey: string };
  episode(seed: number, tokenizer: Tokenizer): FamilyEpisode;
  /** Every candidate of one side, for audits and the split tests. */
  candidates(seed: number, split: Split): CandidateSets;
};

export function defineFamily<P extends Record<string, unknown>>(def: FamilyDefinition<P>): FamilySpec {
  const rngFor = (seed: number, part: string) => new Rng(`${FAMILY_VERSION}/${def.id}/seed=${seed}/${part}`);
  const paramsOf = (seed: number) => def.draw(rngFor(seed, 'params'));
  return {
    id: def.id,
    title: def.title,
    modulation: def.modulation,
    params(seed) {
      const params = paramsOf(seed);
      return { params, paramsKey: `${def.id}/${def.key(params)}` };
    },
    candidates: (seed, split) => def.candidates(paramsOf(seed), split),
    episode(seed, tokenizer) {
      const params = paramsOf(seed);
      const terminal = def.candidates(params, 'terminal');
      const open = def.candidates(params, 'public');
      // A prompt is graded once per episode: a later kind skips prompts an earlier kind has drawn.
      const used = new Set<string>();
      const draw = (kind: keyof CandidateSets, n: number) => {
        const fresh = terminal[kind].filter((c) => !used.has(JSON.stringify(c.prompt)));
        const drawn = drawBalanced(rngFor(seed, kind), fresh, n, `${def.id} seed ${seed}: terminal ${kind}`);
        for (const c of drawn) used.add(JSON.stringify(c.prompt));
        return drawn.map((c, i) => toItem(c, kind, i));
      };
      const target = draw('target', EPISODE_SIZES.target);
      const preservation = draw('preservation', EPISODE_SIZES.preservation);
      const override = draw('override', EPISODE_SIZES.override);
      return {
        paramsKey: `${def.id}/${def.key(params)}`,
        params,
        objective: def.objective(params),
        relevantTokenIds: relevantTokenIds(tokenizer, def.relevantStrings(params)),
        practice: practice(rngFor(seed, 'practice'), open, `${def.id} seed ${seed}: practice`),
        terminal: { target, preservation, override },
        controlExclusions: def.controlExclusions?.(params) ?? [],
      };
    },
  };
}

export function messagesOf(prompt: string | ChatMessage[]): ChatMessage[] {
  return typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : prompt;
}

function toItem(c: Candidate, kind: keyof CandidateSets, index: number): Item {
  if (kind === 'target' && c.edited === undefined)
    throw new Error(`target candidate without an edited answer: ${JSON.stringify(c.prompt)}`);
  const item: Item = {
    id: `${kind}-${String(index).padStart(2, '0')}`,
    kind,
    messages: messagesOf(c.prompt),
    maxNewTokens: c.maxNewTokens,
    check: c.check,
    pristineAnswer: c.pristine,
  };
  if (c.edited !== undefined) item.editedAnswer = c.edited;
  return item;
}

const NOTES = {
  target: 'the requested behaviour',
  preservation: 'must stay as the unedited model answers it',
  override: 'an explicit instruction in the prompt still wins',
} as const;

function practice(rng: Rng, open: CandidateSets, what: string): PracticeExample[] {
  const kept = (['preservation', 'override'] as const).flatMap((kind) =>
    drawBalanced(rng.fork(kind), open[kind], Math.min(PRACTICE_MIX[kind], open[kind].length), what).map((c) => ({
      c,
      kind,
    })),
  );
  const targets = drawBalanced(rng.fork('target'), open.target, EPISODE_SIZES.practice - kept.length, what).map(
    (c) => ({ c, kind: 'target' as const }),
  );
  return [...targets, ...kept].map(({ c, kind }) => ({
    messages: messagesOf(c.prompt),
    response: kind === 'target' ? c.edited! : c.pristine,
    note: NOTES[kind],
  }));
}

/**
 * n candidates with distinct prompts, balanced over strata (round robin in the order strata first appear) and,
 * inside a stratum, spread over subjects (every subject once before any twice). Throws when there are too few.
 */
export function drawBalanced(rng: Rng, candidates: readonly Candidate[], n: number, what: string): Candidate[] {
  const seen = new Set<string>();
  const unique = candidates.filter((c) => {
    const key = JSON.stringify(c.prompt);
    return seen.has(key) ? false : (seen.add(key), true);
  });
  const strata = new Map<string, Candidate[]>();
  for (const c of unique) {
    const stratum = strata.get(c.stratum ?? '');
    if (stratum) stratum.push(c);
    else strata.set(c.stratum ?? '', [c]);
  }
  const queues = [...strata.entries()].map(([name, list]) =>
    spreadOverSubjects(rng.fork(`stratum=${name}`).shuffle(list)),
  );
  const out: Candidate[] = [];
  for (let round = 0; out.length < n && queues.some((q) => q.length > round); round++) {
    for (const queue of queues) if (round < queue.length && out.length < n) out.push(queue[round]!);
  }
  if (out.length < n) throw new Error(`${what}: only ${out.length} distinct candidates, ${n} needed`);
  return out;
}

function spreadOverSubjects(list: Candidate[]): Candidate[] {
  const rank = new Map<string, number>();
  const ranked = list.map((c, i) => {
    const subject = c.subject ?? `#${i}`;
    const r = rank.get(subject) ?? 0;
    rank.set(subject, r + 1);
    return { c, r, i };
  });
  return ranked.sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.c);
}

/**
 * The token ids an edit is about: every word-initial token ("▁…") of each string with a leading space (as it appears
 * mid-sentence), plus the string's own id where it is a single token without one (as at the start of an answer).
 * Continuation pieces ("ing", "ors") are left out: they belong to thousands of other words.
 */
export function relevantTokenIds(tokenizer: Tokenizer, strings: readonly string[]): number[] {
  const ids = new Set<number>();
  for (const s of strings) {
    for (const id of tokenizer.encodeRaw(` ${s}`)) {
      const token = tokenizer.idToToken(id) ?? '';
      if (token.startsWith('▁') && token.length > 1) ids.add(id);
    }
    const bare = tokenizer.encodeRaw(s);
    if (bare.length === 1) ids.add(bare[0]!);
  }
  return [...ids].sort((a, b) => a - b);
}

/** Fills {name} slots; a slot without a value is an error (a data typo must not reach an episode). */
export function fill(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`template "${template}": no value for {${name}}`);
    return String(values[name]);
  });
}

type Wrappers = { version: string; wrappers: string[] };

/** The neutral question framings of one side, split per family. */
export function wrappers(family: FamilyId, split: Split): string[] {
  return onSide(family, 'wrappers', readData<Wrappers>('families/wrappers.json').wrappers, split, (w) => w);
}

/** Every wrapper around every question: the questions' and the wrappers' splits are independent. */
export function wrapped(family: FamilyId, split: Split, question: string): string[] {
  return wrappers(family, split).map((w) => fill(w, { q: question }));
}

/** Upper-cases the first letter (templates that start with a slot). */
export const capitalise = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
