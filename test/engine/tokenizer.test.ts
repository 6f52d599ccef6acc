import { beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '../../engine/tokenizer.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

let tokenizer: Tokenizer;
beforeAll(async () => {
  tokenizer = await Tokenizer.load(fixtureCheckpoint('tiny'));
});

describe('Gemma 3 tokenizer and chat template (offline, from the checkpoint folder)', () => {
  it('reproduces gemma3.md §4 exactly', () => {
    const messages = [
      { role: 'system' as const, content: 'You are helpful.' },
      { role: 'user' as const, content: '  Hello there!  ' },
    ];
    expect(tokenizer.chatText(messages)).toBe(
      '<bos><start_of_turn>user\nYou are helpful.\n\nHello there!<end_of_turn>\n<start_of_turn>model\n',
    );
    expect(tokenizer.chatIds(messages)).toEqual([
      2, 105, 2364, 107, 3048, 659, 11045, 236761, 108, 9259, 993, 236888, 106, 107, 105, 4368, 107,
    ]);
    expect(tokenizer.encode('Hello world')).toEqual([2, 9259, 1902]);
  });

  it('maps assistant to model and refuses turns that do not alternate', () => {
    const text = tokenizer.chatText([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ]);
    expect(text).toBe(
      '<bos><start_of_turn>user\na<end_of_turn>\n<start_of_turn>model\nb<end_of_turn>\n<start_of_turn>user\nc<end_of_turn>\n<start_of_turn>model\n',
    );
    expect(() =>
      tokenizer.chatIds([
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ]),
    ).toThrow(/alternate/);
  });

  it('knows single tokens both ways', () => {
    expect(tokenizer.idToToken(9259)).toBe('Hello');
    expect(tokenizer.tokenToId('▁world')).toBe(1902);
    expect(tokenizer.vocabSize).toBe(262145);
    expect(tokenizer.decode([9259, 1902])).toBe('Hello world');
    expect(tokenizer.decode([])).toBe(''); // a generation that stops at once
  });

  it('fails clearly when the files are missing', async () => {
    await expect(Tokenizer.load('/nonexistent-dir')).rejects.toThrow(/tokenizer\.json is missing/);
  });
});
