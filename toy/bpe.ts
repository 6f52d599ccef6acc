// A small deterministic BPE trainer that writes a Hugging Face tokenizer.json in the Gemma 3 pipeline format
// (gemma3.md §4): Replace(" "→"▁") normaliser, byte fallback, <bos> post-processor, Gemma's special ids. The toy model
// trains on our own corpus with it, so Gemma's 262k vocabulary is never vendored.
//
// Gemma's normaliser runs before its Split(" ") pre-tokenizer, so the pre-tokenizer never fires and HF's BPE sees the
// whole text as one word. We train on chunks that start at "▁" (and lone "\n"s) instead; since no merge ever joins
// across a chunk start, running the merges over the whole text gives the concatenation of the chunk encodings.

export type BpeOptions = { vocabSize: number };

export type AddedToken = {
  id: number;
  content: string;
  single_word: false;
  lstrip: false;
  rstrip: false;
  normalized: false;
  special: boolean;
};

type Pattern = { String: string };
type TemplatePiece =
  { SpecialToken: { id: string; type_id: number } } | { Sequence: { id: 'A' | 'B'; type_id: number } };

export type TokenizerJson = {
  version: '1.0';
  truncation: null;
  padding: null;
  added_tokens: AddedToken[];
  normalizer: { type: 'Replace'; pattern: Pattern; content: string };
  pre_tokenizer: { type: 'Split'; pattern: Pattern; behavior: 'MergedWithPrevious'; invert: false };
  post_processor: {
    type: 'TemplateProcessing';
    single: TemplatePiece[];
    pair: TemplatePiece[];
    special_tokens: Record<string, { id: string; ids: number[]; tokens: string[] }>;
  };
  decoder: {
    type: 'Sequence';
    decoders: ({ type: 'Replace'; pattern: Pattern; content: string } | { type: 'ByteFallback' } | { type: 'Fuse' })[];
  };
  model: {
    type: 'BPE';
    dropout: null;
    unk_token: '<unk>';
    continuing_subword_prefix: null;
    end_of_word_suffix: null;
    fuse_unk: true;
    byte_fallback: true;
    ignore_merges: false;
    vocab: Record<string, number>;
    merges: [string, string][];
  };
};

const SPACE = '▁';

/** Ids 0…106 as in Gemma 3, because the runtime hard-codes pad 0, eos 1, bos 2 and stop ids 1 and 106. */
const SPECIAL_TOKENS: readonly { content: string; special: boolean }[] = [
  { content: '<pad>', special: true },
  { content: '<eos>', special: true },
  { content: '<bos>', special: true },
  { content: '<unk>', special: true },
  // Placeholders only so that the turn markers land on 105/106 (Gemma's 4 and 5 are <mask> and [multimodal]).
  ...Array.from({ length: 101 }, (_, i) => ({ content: `<unused${i}>`, special: false })),
  { content: '<start_of_turn>', special: true },
  { content: '<end_of_turn>', special: true },
];

/** SentencePiece byte-fallback pieces `<0x00>`…`<0xFF>`, uppercase hex as the HF BPE model looks them up. */
const BYTE_TOKENS: readonly string[] = Array.from(
  { length: 256 },
  (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`,
);

/** The Gemma 3 chat template, verbatim (gemma3.md §4; [HF-CONV] `_CHAT_TEMPLATE`), one source line per array item. */
const CHAT_TEMPLATE = [
  '{{ bos_token }}',
  "{%- if messages[0]['role'] == 'system' -%}",
  "    {%- if messages[0]['content'] is string -%}",
  "        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}",
  '    {%- else -%}',
  "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}",
  '    {%- endif -%}',
  '    {%- set loop_messages = messages[1:] -%}',
  '{%- else -%}',
  '    {%- set first_user_prefix = "" -%}',
  '    {%- set loop_messages = messages -%}',
  '{%- endif -%}',
  '{%- for message in loop_messages -%}',
  "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}",
  '        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}',
  '    {%- endif -%}',
  "    {%- if (message['role'] == 'assistant') -%}",
  '        {%- set role = "model" -%}',
  '    {%- else -%}',
  "        {%- set role = message['role'] -%}",
  '    {%- endif -%}',
  "    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else \"\") }}",
  "    {%- if message['content'] is string -%}",
  "        {{ message['content'] | trim }}",
  "    {%- elif message['content'] is iterable -%}",
  "        {%- for item in message['content'] -%}",
  "            {%- if item['type'] == 'image' -%}",
  "                {{ '<start_of_image>' }}",
  "            {%- elif item['type'] == 'text' -%}",
  "                {{ item['text'] | trim }}",
  '            {%- endif -%}',
  '        {%- endfor -%}',
  '    {%- else -%}',
  '        {{ raise_exception("Invalid content type") }}',
  '    {%- endif -%}',
  "    {{ '<end_of_turn>\n' }}",
  '{%- endfor -%}',
  '{%- if add_generation_prompt -%}',
  "    {{'<start_of_turn>model\n'}}",
  '{%- endif -%}',
  '',
].join('\n');

const SPECIAL_IDS = new Map(SPECIAL_TOKENS.map((t, i) => [t.content, i]));
// HF matches added tokens on the raw text before normalising (their names hold no regex metacharacters).
const SPECIAL_SPLIT = new RegExp(`(${SPECIAL_TOKENS.map((t) => t.content).join('|')})`);

/**
 * Text cut as HF sees it, into pieces no merge may cross: special-token strings whole, then the normalised rest cut
 * before each "▁" and around each "\n".
 */
export function chunksOf(text: string): string[] {
  return text
    .split(SPECIAL_SPLIT)
    .flatMap((part, i) => (i % 2 ? [part] : (part.replaceAll(' ', SPACE).match(/\n|▁[^▁\n]*|[^▁\n]+/gu) ?? [])));
}

/** Pair key of two token ids (ids stay far below 2^20). */
const pairKey = (a: number, b: number) => a * 0x100000 + b;

/**
 * Trains on `texts` (raw strings; spaces are normalised to ▁ as the tokenizer does). Ids: Gemma's 0…106, byte tokens
 * 107…362, the corpus characters by code point, then merges until `vocabSize` tokens or no pair occurs twice.
 * Deterministic: the same texts in any order give byte-identical JSON.
 */
export function trainBpe(texts: readonly string[], options: BpeOptions): TokenizerJson {
  const chunkCounts = new Map<string, number>();
  for (const text of texts) {
    for (const chunk of chunksOf(text))
      if (!SPECIAL_IDS.has(chunk)) chunkCounts.set(chunk, (chunkCounts.get(chunk) ?? 0) + 1);
  }

  const chars = new Set<string>();
  for (const chunk of chunkCounts.keys()) for (const c of chunk) chars.add(c);
  const sortedChars = [...chars].sort((x, y) => x.codePointAt(0)! - y.codePointAt(0)!); // code point, not UTF-16 order

  const tokens = [...SPECIAL_TOKENS.map((t) => t.content), ...BYTE_TOKENS, ...sortedChars];
  if (options.vocabSize < tokens.length) {
    throw new Error(
      `bpe: vocabSize ${options.vocabSize} is below the ${tokens.length} fixed, byte and character tokens`,
    );
  }
  const ids = new Map(tokens.map((t, i) => [t, i]));

  // Distinct chunks as id sequences; pair counts are weighted by chunk frequency and kept up to date incrementally.
  const words = [...chunkCounts.keys()].map((chunk) => Array.from(chunk, (c) => ids.get(c)!));
  const freqs = [...chunkCounts.values()];
  const pairCounts = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>(); // may list words that lost the pair since: merging them is a no-op
  const countPairs = (w: number, sign: 1 | -1) => {
    const word = words[w]!;
    for (let i = 0; i + 1 < word.length; i++) {
      const key = pairKey(word[i]!, word[i + 1]!);
      const count = (pairCounts.get(key) ?? 0) + sign * freqs[w]!;
      if (count === 0) pairCounts.delete(key);
      else pairCounts.set(key, count);
      if (sign === 1) {
        if (!pairWords.has(key)) pairWords.set(key, new Set());
        pairWords.get(key)!.add(w);
      }
    }
  };
  words.forEach((_, w) => countPairs(w, 1));

  const merges: [string, string][] = [];
  const banned = new Set<number>();
  while (tokens.length < options.vocabSize) {
    // Most frequent pair; ties go to the smaller (left, right) string pair so the result never depends on Map order.
    let best = -1;
    let bestCount = 2; // a pair seen once is not worth a token
    for (const [key, count] of pairCounts) {
      if (count < bestCount || banned.has(key) || (count === bestCount && best >= 0 && !pairLess(tokens, key, best)))
        continue;
      best = key;
      bestCount = count;
    }
    if (best < 0) break;

    const left = Math.floor(best / 0x100000);
    const right = best % 0x100000;
    const merged = tokens[left]! + tokens[right]!;
    if ((ids.get(merged) ?? Infinity) < SPECIAL_TOKENS.length + BYTE_TOKENS.length) {
      banned.add(best); // corpus text spelling "<0x41>" must stay characters, not become a byte token
      continue;
    }
    // Two different pairs can spell the same string (▁a+b, ▁+ab): HF's trainer then reuses the id, as here.
    let id = ids.get(merged);
    if (id === undefined) {
      id = tokens.length;
      tokens.push(merged);
      ids.set(merged, id);
    }
    merges.push([tokens[left]!, tokens[right]!]);

    for (const w of [...pairWords.get(best)!]) {
      countPairs(w, -1);
      words[w] = mergeWord(words[w]!, left, right, id);
      countPairs(w, 1);
    }
    pairCounts.delete(best);
    pairWords.delete(best);
    banned.add(best); // one rank per pair (HF keeps only the last of duplicates), even if a reused id brings it back
  }

  return tokenizerJson(tokens, merges);
}

function pairLess(tokens: readonly string[], key: number, other: number): boolean {
  const [a, b] = [tokens[Math.floor(key / 0x100000)]!, tokens[key % 0x100000]!];
  const [c, d] = [tokens[Math.floor(other / 0x100000)]!, tokens[other % 0x100000]!];
  return a !== c ? a < c : b < d;
}

/** Every non-overlapping (left, right) replaced by `merged`, scanning left to right as HF's BPE does. */
function mergeWord(word: number[], left: number, right: number, merged: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < word.length; i++) {
    if (word[i] === left && word[i + 1] === right) {
      out.push(merged);
      i++;
    } else out.push(word[i]!);
  }
  return out;
}

function tokenizerJson(tokens: readonly string[], merges: [string, string][]): TokenizerJson {
  const bos = { SpecialToken: { id: '<bos>', type_id: 0 } };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map(({ content, special }, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special,
    })),
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: SPACE },
    pre_tokenizer: { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
    post_processor: {
      type: 'TemplateProcessing',
      single: [bos, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        bos,
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<bos>', type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<bos>': { id: '<bos>', ids: [2], tokens: ['<bos>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SPACE }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab: Object.fromEntries(tokens.map((t, i) => [t, i])),
      merges,
    },
  };
}

/**
 * Reference encoder, as HF's `encode(text, add_special_tokens=false)`: special-token strings to their ids; in each other
 * chunk, apply the lowest-ranked merge at its leftmost place until none applies, then map pieces to ids, spelling
 * unknown ones as UTF-8 byte tokens.
 */
export function encodeWith(tokenizer: TokenizerJson, text: string): number[] {
  const { vocab, merges } = tokenizer.model;
  const ranks = new Map(merges.map((pair, i) => [JSON.stringify(pair), i]));
  const ids: number[] = [];
  for (const chunk of chunksOf(text)) {
    if (SPECIAL_IDS.has(chunk)) {
      ids.push(SPECIAL_IDS.get(chunk)!);
      continue;
    }
    const pieces = Array.from(chunk);
    for (;;) {
      let at = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < pieces.length; i++) {
        const rank = ranks.get(JSON.stringify([pieces[i], pieces[i + 1]]));
        if (rank !== undefined && rank < bestRank) [at, bestRank] = [i, rank];
      }
      if (at < 0) break;
      pieces.splice(at, 2, pieces[at]! + pieces[at + 1]!);
    }
    for (const piece of pieces) {
      if (Object.hasOwn(vocab, piece)) ids.push(vocab[piece]!);
      else for (const byte of new TextEncoder().encode(piece)) ids.push(vocab[BYTE_TOKENS[byte]!]!);
    }
  }
  return ids;
}

/** tokenizer_config.json: Gemma's, minus the image tokens and processor class. */
export function tokenizerConfig(): Record<string, unknown> {
  return {
    add_bos_token: true,
    add_eos_token: false,
    bos_token: '<bos>',
    eos_token: '<end_of_turn>',
    pad_token: '<pad>',
    unk_token: '<unk>',
    padding_side: 'left',
    clean_up_tokenization_spaces: false,
    spaces_between_special_tokens: false,
    tokenizer_class: 'GemmaTokenizer',
    model_max_length: 32768,
    chat_template: CHAT_TEMPLATE,
  };
}
