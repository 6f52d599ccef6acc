import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULTS, modelFolderName, readConfigFile, resolveConfig } from '../../mmlu-pro/config.ts';
import { CATEGORIES } from '../../mmlu-pro/data.ts';
import { LANGUAGES } from '../../mmlu-pro/languages.ts';
import { REPO_ROOT, scratchDir } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

function tomlFile(name: string, text: string): string {
  const file = path.join(scratch.dir, name);
  writeFileSync(file, text);
  return file;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('fills every default and takes the language\'s system prompt', () => {
    const config = resolveConfig({}, { model: 'm' });
    expect(config.server).toEqual({ ...DEFAULTS.server, model: 'm' });
    expect(config.test.categories).toEqual([...CATEGORIES]);
    expect(config.test.cot).toBe(false);
    expect(config.inference.system_prompt).toBe(LANGUAGES.en.systemPrompt);
    expect(resolveConfig({}, { model: 'm', language: 'JA' }).inference.system_prompt).toBe(LANGUAGES.ja.systemPrompt);
    expect(Object.isFrozen(config.inference.stop)).toBe(true);
  });

  it('reads the example config; flags override the file', () => {
    const file = readConfigFile(path.join(REPO_ROOT, 'mmlu-pro/config.example.toml'));
    const fromFile = resolveConfig(file);
    expect(fromFile.server.model).toBe('llama3');
    expect(fromFile.test.cot).toBe(true);
    expect(fromFile.log.log_prompt).toBe(true);
    const overridden = resolveConfig(file, { model: 'other', parallel: 8, category: 'math, computer science', url: 'http://127.0.0.1:9/v1', timeout: 5 });
    expect(overridden.server).toMatchObject({ model: 'other', url: 'http://127.0.0.1:9/v1', timeout: 5 });
    expect(overridden.test.parallel).toBe(8);
    expect(overridden.test.categories).toEqual(['math', 'computer science']);
  });

  it('rejects unknown sections and keys, and wrong types, listing every problem', () => {
    const file = tomlFile('bad.toml', '[server]\nmodel = 3\nhost = "x"\n[inference]\ntemprature = 0.1\nconstructor = 1\n[extra]\na = 1\n');
    const problems = problemsOf(() => readConfigFile(file));
    expect(problems).toHaveLength(5);
    expect(problems.join('\n')).toMatch(/\[server\] model must be a string/);
    expect(problems.join('\n')).toMatch(/unknown key "host" in \[server\]/);
    expect(problems.join('\n')).toMatch(/unknown key "temprature" in \[inference\]/);
    expect(problems.join('\n')).toMatch(/unknown key "constructor" in \[inference\]/);
    expect(problems.join('\n')).toMatch(/unknown section "extra"/);
  });

  it('reports a TOML syntax error and a missing file', () => {
    expect(problemsOf(() => readConfigFile(tomlFile('syntax.toml', 'a = = 1')))[0]).toMatch(/syntax\.toml: Invalid TOML/);
    expect(problemsOf(() => readConfigFile(path.join(scratch.dir, 'none.toml')))[0]).toMatch(/cannot read config file/);
  });

  it('rejects bad values: unknown category, style, language, ranges, missing model', () => {
    const problems = problemsOf(() =>
      resolveConfig({}, { category: 'math,astrology', style: 'chatty', language: 'fr', parallel: 0, verbosity: 3, url: 'localhost:8000', subset: -1 }),
    );
    const text = problems.join('\n');
    expect(text).toMatch(/unknown category "astrology"/);
    expect(text).toMatch(/style .* must be one of multi_chat, single_chat, no_chat/);
    expect(text).toMatch(/language .* must be one of en, id, ja, ko, zh/);
    expect(text).toMatch(/parallel .* from 1 to 1024/);
    expect(text).toMatch(/verbosity .* 0, 1 or 2/);
    expect(text).toMatch(/url .* http\(s\) URL/);
    expect(text).toMatch(/subset .* positive integer/);
    expect(text).toMatch(/server.model \(--model\) is required/);
  });

  it('accepts stop as a string or a list', () => {
    expect(resolveConfig({ inference: { stop: '<|eot_id|>' } }, { model: 'm' }).inference.stop).toEqual(['<|eot_id|>']);
    expect(resolveConfig({ inference: { stop: ['a', 'b'] } }, { model: 'm' }).inference.stop).toEqual(['a', 'b']);
  });

  it('makes the model name path-safe as the reference (\\W → -)', () => {
    expect(modelFolderName('meta-llama/Llama-3.1-8B:q4')).toBe('meta-llama-Llama-3-1-8B-q4');
  });
});
