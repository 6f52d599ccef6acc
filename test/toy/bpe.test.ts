import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import type { ChatMessage } from '../../core/chat.ts';
import { encodeWith, trainBpe, tokenizerConfig, type TokenizerJson } from '../../toy/bpe.ts';

/** 200 generated Q/A sentences, a few accented ones, and some layout (newlines, double and edge spaces). */
function corpus(): string[] {
  const cities = ['Paris', 'Berlin', 'Madrid', 'Rome', 'Vienna', 'Lisbon', 'Prague', 'Dublin', 'Oslo', 'Athens'];
  const countries = [
    'France',
    'Germany',
    'Spain',
    'Italy',
    'Austria',
    'Portugal',
    'Czechia',
    'Ireland',
    'Norway',
    'Greece',
  ];
  const texts: string[] = [];
  for (let i = 0; i < 100; i++) {
    const c = i % 10;
    const n = (i * 7) % 10;
    texts.push(
      `Question: What is the capital of ${countries[c]}? Answer: The capital of ${countries[c]} is ${cities[c]}.`,
    );
    texts.push(
      `Q: How many people visit ${cities[n]} each year?\nA: About ${i + 3} million people visit ${cities[n]}.`,
    );
  }
  texts.push('Le café est très bon à Zürich.', 'El niño comió piñata en São Paulo.', 'Garçon, une crème brûlée !');
  texts.push('  two leading spaces', 'double  space', 'trailing space ', '\n\nblank lines\n\n');
  return texts;
}

const BASE = 107 + 256; // special ids 0…106, then byte tokens

let dir: string;
let json: TokenizerJson;
let toy: Tokenizer;
let gemma: Tokenizer;
beforeAll(async () => {
  json = trainBpe(corpus(), { vocabSize: 600 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'toy-bpe-'));
  writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
  writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig()));
  [toy, gemma] = await Promise.all([Tokenizer.load(dir), Tokenizer.load(gemma3TokenizerDir())]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('toy BPE trainer', () => {
  it('learns the most frequent pair first, breaks ties by string order, stops below count 2', () => {
    // Pairs a+b, c+d and ▁+c each occur twice; "a" < "c" < "▁" in string order.
    const tied = trainBpe(['ab cd', 'ab cd'], { vocabSize: 1000 });
    expect(tied.model.merges).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      ['▁', 'cd'],
    ]);
    const counted = trainBpe(['ab ab ab abc'], { vocabSize: 1000 });
    expect(counted.model.merges).toEqual([
      ['a', 'b'],
      ['▁', 'ab'],
    ]); // ▁ab+c occurs once
    expect(Object.keys(counted.model.vocab).slice(BASE)); // no integer-like keys here, so insertion order is id order.toEqual(['a', 'b', 'c', '▁', 'ab', '▁ab']);
    expect(() => trainBpe(['abc'], { vocabSize: BASE + 2 })).toThrow(/below/);
  });

  it('never learns special or byte tokens from text that spells them', () => {
    const spelled = trainBpe(Array(5).fill('<start_of_turn>user <0x41> <0x41><end_of_turn>'), { vocabSize: 1000 });
    // Special strings are cut out first, as HF does: "user" is learned, nothing spanning "<start_of_turn>".
    expect(Object.keys(spelled.model.vocab)).toContain('user');
    expect(Object.keys(spelled.model.vocab).filter((t) => t.includes('turn'))).toEqual([
      '<start_of_turn>',
      '<end_of_turn>',
    ]);
    for (const [a, b] of spelled.model.merges) expect(spelled.model.vocab[a + b]).toBeGreaterThanOrEqual(BASE);
    expect(spelled.model.merges.map((m) => m.join(''))).toContain('▁<0x41>');
    expect(encodeWith(spelled, '<0x41>')).toHaveLength(2); // "<0x41" + ">", not byte token 107 + 0x41
    expect(encodeWith(spelled, '<end_of_turn>')).toEqual([106]);
  });

  it('lays out ids as Gemma does, then bytes, characters by code point and merges', () => {
    // Sorted by id: a JS object lists integer-like keys ("0"…"9") first, whatever their id.
    const vocab = Object.entries(json.model.vocab).sort((x, y) => x[1] - y[1]);
    expect(vocab).toHaveLength(600);
    expect(vocab.map(([, id]) => id)).toEqual(vocab.map((_, i) => i));
    expect(json.added_tokens.map((t) => [t.id, t.content])).toEqual(vocab.slice(0, 107).map(([t, id]) => [id, t]));
    expect(vocab[4]![0]).toBe('<unused0>');
    expect(vocab[104]![0]).toBe('<unused100>');
    expect(vocab[107]![0]).toBe('<0x00>');
    expect(vocab[362]![0]).toBe('<0xFF>');
    const learned = vocab.slice(BASE).map(([t]) => t);
    const chars = learned.slice(
      0,
      learned.findIndex((t) => [...t].length > 1),
    );
    expect(learned.slice(chars.length).every((t) => [...t].length > 1)).toBe(true);
    const codePoints = chars.map((c) => c.codePointAt(0)!);
    expect(codePoints).toEqual([...codePoints].sort((a, b) => a - b));
    expect(chars).toContain('ü');
    // A merged token holds "▁" only in front and never "\n", so no merge crosses a chunk boundary.
    for (const [a, b] of json.model.merges) expect(`${a}${b}`.slice(1)).not.toMatch(/[▁\n]/);

    expect([toy.tokenToId('<pad>'), toy.tokenToId('<eos>'), toy.tokenToId('<bos>'), toy.tokenToId('<unk>')]).toEqual([
      0, 1, 2, 3,
    ]);
    expect([toy.tokenToId('<start_of_turn>'), toy.tokenToId('<end_of_turn>')]).toEqual([105, 106]);
  });

  it('encodes the corpus as the reference encoder does, with real merges, and decodes it back', () => {
    let chars = 0;
    let ids = 0;
    for (const text of corpus()) {
      const encoded = toy.encodeRaw(text);
      expect(encoded).toEqual(encodeWith(json, text));
      expect(toy.decode(encoded)).toBe(text);
      chars += [...text].length;
      ids += encoded.length;
    }
    expect(ids).toBeLessThan(chars / 3); // merges are used, not just characters
    expect(toy.encode('The capital')).toEqual([2, ...encodeWith(json, 'The capital')]);
    expect(toy.encodeRaw(' capital')).toEqual([toy.tokenToId('▁capital')]);
  });

  it('spells unseen text in bytes, never <unk>', () => {
    for (const text of ['🙂', '東京', 'Ærøskøbing', 'The capital of Japan is 東京 🙂']) {
      const encoded = toy.encodeRaw(text);
      expect(encoded).not.toContain(3);
      expect(encoded).toEqual(encodeWith(json, text));
      expect(toy.decode(encoded)).toBe(text);
    }
    expect(toy.encodeRaw('🙂')).toEqual([0xf0, 0x9f, 0x99, 0x82].map((b) => 107 + b));
  });

  it('renders chats exactly as the Gemma 3 tokenizer does', () => {
    const gemmaConfig = JSON.parse(readFileSync(path.join(gemma3TokenizerDir(), 'tokenizer_config.json'), 'utf8'));
    expect(tokenizerConfig().chat_template).toBe(gemmaConfig.chat_template);

    const nl = toy.tokenToId('\n')!;
    expect(toy.chatIds([{ role: 'user', content: 'Hi' }])).toEqual([
      2,
      105,
      ...encodeWith(json, 'user'),
      nl,
      ...encodeWith(json, 'Hi'),
      106,
      nl,
      105,
      ...encodeWith(json, 'model'),
      nl,
    ]);
    const chats: ChatMessage[][] = [
      [{ role: 'user', content: 'Hi' }],
      [
        { role: 'system', content: 'You are helpful.' },
        { role: 'user', content: '  Hello there!  ' },
      ],
      [
        { role: 'system', content: 'Answer briefly.\n' },
        { role: 'user', content: 'What is the capital of France?' },
        { role: 'assistant', content: 'Paris.' },
        { role: 'user', content: 'And of Spain?' },
      ],
    ];
    for (const messages of chats) {
      for (const generation of [true, false])
        expect(toy.chatText(messages, generation)).toBe(gemma.chatText(messages, generation));
      expect(toy.chatIds(messages)).toEqual(encodeWith(json, toy.chatText(messages)));
    }
    expect(() => toy.chatText([{ role: 'assistant', content: 'a' }])).toThrow(/alternate/);
  });

  it('is deterministic and independent of text order', () => {
    const texts = corpus();
    const first = JSON.stringify(trainBpe(texts, { vocabSize: 600 }));
    expect(JSON.stringify(trainBpe(texts, { vocabSize: 600 }))).toBe(first);
    expect(JSON.stringify(trainBpe([...texts].reverse(), { vocabSize: 600 }))).toBe(first);
    expect(first).toBe(JSON.stringify(json));
  });
});
