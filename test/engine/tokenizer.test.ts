import { execFile } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer } from '../../engine/tokenizer.ts';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';

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

describe('the tokenizer library', () => {
  it('is not loaded by a process that imports the engine and the evaluation code but builds no tokenizer', async () => {
    // An evaluation process (the runner tokenizes for it): ~0.9 s of its start, every time, were this library's.
    const module = (file: string) => JSON.stringify(pathToFileURL(path.join(REPO_ROOT, file)).href);
    const script = `
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).some((f) => f.includes('@huggingface/transformers'));
      await import(${module('service/evaluate.ts')});
      const before = loaded();
      require('@huggingface/transformers');
      console.log(JSON.stringify({ before, after: loaded() }));`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: REPO_ROOT,
      },
    );
    expect(JSON.parse(stdout)).toEqual({ before: false, after: true });
  });
});
