// The 64 general controls of an episode (families.md): about a third arithmetic, a third factual answers, a third
// exact copying, drawn from data/controls.json by the control seed alone. An item's id is a hash of its prompt, so a
// replay with another control seed can tell repeated controls (same id) from new ones.
import { createHash } from 'node:crypto';
import { containsTerm, normalise } from './checks/normalise.ts';
import { readData } from './data.ts';
import { fill } from './families/define.ts';
import { numberForms } from './families/world.ts';
import { Rng } from '../core/random.ts';
import { FAMILY_VERSION, type Check, type Item } from './types.ts';

type Op = '+' | '-' | '*';
type Factual = { category: string; question: string; answers: string[] };
type ControlsData = {
  mix: { arithmetic: number; factual: number; copy: number };
  factualTemplate: string;
  arithmetic: { templates: Record<Op, string[]>; ranges: Record<Op, [[number, number], [number, number]]> };
  copy: { templates: string[]; kinds: Record<'words' | 'digits' | 'mixed', [number, number]> };
  factual: Factual[];
  words: string[];
};

const controlsData = () => readData<ControlsData>('controls.json');

type Draft = { prompt: string; check: Check; pristine: string; maxNewTokens: number };

/**
 * The general controls for `controlSeed`. A factual control whose question or answers mention one of `exclusions`
 * (what the episode's edit changes on purpose, e.g. a withheld capital) is skipped and the next draw takes its place.
 */
export function generalControls(controlSeed: number, exclusions: readonly string[] = []): Item[] {
  const d = controlsData();
  const rng = new Rng(`${FAMILY_VERSION}/controls/seed=${controlSeed}`);
  const drafts = [
    ...arithmetic(rng.fork('arithmetic'), d, d.mix.arithmetic),
    ...factual(rng.fork('factual'), d, d.mix.factual, exclusions),
    ...copying(rng.fork('copy'), d, d.mix.copy),
  ];
  return drafts.map((draft) => ({
    id: `control-${createHash('sha256').update(draft.prompt).digest('hex').slice(0, 12)}`,
    kind: 'control',
    messages: [{ role: 'user', content: draft.prompt }],
    maxNewTokens: draft.maxNewTokens,
    check: draft.check,
    pristineAnswer: draft.pristine,
  }));
}

/** Integer +, − (non-negative results) and × with exact answers; the three operations in turn. */
function arithmetic(rng: Rng, d: ControlsData, n: number): Draft[] {
  const ops: Op[] = ['+', '-', '*'];
  const out = new Map<string, Draft>();
  for (let i = 0; out.size < n; i++) {
    const op = ops[i % ops.length]!;
    const [[aMin, aMax], [bMin, bMax]] = d.arithmetic.ranges[op];
    const a = rng.range(aMin, aMax);
    const b = rng.range(bMin, bMax);
    const value = op === '+' ? a + b : op === '-' ? a - b : a * b;
    const prompt = fill(rng.pick(d.arithmetic.templates[op]), { a, b });
    const shown = op === '*' ? '×' : op;
    out.set(prompt, {
      prompt,
      check: { type: 'number', value },
      pristine: `${a} ${shown} ${b} = ${value}`,
      maxNewTokens: 32,
    });
  }
  return [...out.values()];
}

function factual(rng: Rng, d: ControlsData, n: number, exclusions: readonly string[]): Draft[] {
  const excluded = (f: Factual) =>
    exclusions.some((term) => [f.question, ...f.answers].some((text) => containsTerm(normalise(text), term)));
  const pool = rng.shuffle(d.factual).filter((f) => !excluded(f));
  if (pool.length < n)
    throw new Error(`general controls: only ${pool.length} factual questions after exclusions, ${n} needed`);
  return pool.slice(0, n).map((f) => ({
    prompt: fill(d.factualTemplate, { question: f.question }),
    check: { type: 'contains_any', values: f.category === 'number' ? numberForms(Number(f.answers[0])) : f.answers },
    pristine: pristineFactual(f),
    maxNewTokens: 48,
  }));
}

function pristineFactual(f: Factual): string {
  const answer = f.answers[0]!;
  if (f.category === 'number') return `The answer is ${answer}.`;
  if (f.category === 'chemical symbol') return `The chemical symbol is ${answer}.`;
  return `${answer}.`;
}

function copying(rng: Rng, d: ControlsData, n: number): Draft[] {
  const kinds = ['words', 'digits', 'mixed'] as const;
  const out = new Map<string, Draft>();
  for (let i = 0; out.size < n; i++) {
    const kind = kinds[i % kinds.length]!;
    const [min, max] = d.copy.kinds[kind];
    const length = rng.range(min, max);
    const text =
      kind === 'words'
        ? rng.sample(d.words, length).join(' ')
        : kind === 'digits'
          ? Array.from({ length }, (_, j) => String(j === 0 ? rng.range(1, 9) : rng.int(10))).join('')
          : mixedCase(rng, length);
    const prompt = fill(rng.pick(d.copy.templates), { text });
    out.set(prompt, { prompt, check: { type: 'copy_exact', text }, pristine: text, maxNewTokens: 48 });
  }
  return [...out.values()];
}

/** Letters of both cases and digits, with at least one of each, and no look-alikes (0/O, 1/l/I). */
function mixedCase(rng: Rng, length: number): string {
  const lower = 'abcdefghjkmnpqrstuvwxyz';
  const upper = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
  const digits = '23456789';
  const all = lower + upper + digits;
  const chars = [rng.pick([...lower]), rng.pick([...upper]), rng.pick([...digits])];
  while (chars.length < length) chars.push(rng.pick([...all]));
  return rng.shuffle(chars).join('');
}
