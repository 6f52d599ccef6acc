import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULTS,
  FLAG_SETTINGS,
  outputFolder,
  readConfigFile,
  resolveConfig,
  type FlagName,
} from '../../mmlu-pro/config.ts';
import { CATEGORIES } from '../../mmlu-pro/data.ts';
import { LANGUAGES } from '../../mmlu-pro/languages.ts';
import { REPO_ROOT, scratchDir } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

// OAI-API-MMLU-Pro 6c0efcf's config.toml, byte for byte (the Korean and Chinese prompts in its comments).
const FORK_EXAMPLE = `[server]
url = "http://localhost:8000/v1"
api_key = "api key"
model = "llama3"
model_note = "LORA"
timeout = 600.0

[inference]
# Ssettings   below are from evaluate_from_local.py for VLLM  on TIGER-AI-Lab/MMLU-Pro
temperature = 0.0
top_p = 1.0 # not specified but  default for VLLM
max_tokens = 1024
stop = "<|eot_id|>" # Change to stop token of model being tested

# The variable {subject} will be replaced with appropriate value in  runtime.
system_prompt = "You are an expert that knows everything. You are tasked with answering a multiple-choice question. The following is a multiple choice question (with answers) about {subject}. Give your final answer in the format of \`The answer is (chosen answer)\`."

# Indo system prompt
# system_prompt = "Anda adalah seseorang yang pintar dan mengetahui segalanya. Anda diberi perintah untuk menjawab pertanyaan pilihan ganda. Berikut adalah pertanyaan pilihan ganda tentang {subject}. Jawab dengan format: 'Jawabannya adalah (pilihan jawaban)'."

# Japan system prompt
# system_prompt = "あなたはすべてを知っている専門家です。多肢選択式の質問に回答することが求められます。次は、{subject} に関する多肢選択式の質問です。最終的な回答を「答えは (選択した回答) です」という形式で入力してください。"

# Korean system prompt
# system_prompt = "당신은 모든 것을 아는 전문가입니다. 당신은 객관식 질문에 답하는 임무를 맡고 있습니다. 다음은 {subject}에 관한 객관식 질문(답변 포함)입니다. 최종 답변은 '대답은 (선택된 답변)' 형식으로 작성해 주세요."

# Chinese system prompt
# system_prompt = "你是一位无所不知的专家。你的任务是回答一道多项选择题。以下是一道关于{subject}的多项选择题（附答案）。请以“答案是（选定答案）”的格式给出你的最终答案。"

# "single_chat" inserts all the COT examples and question into a single message. Default  style for GPT-4O script, but raises a lot of format issues especially for small models.
# "multi_chat" inserts COT examples into multi-turn messages. Use for instruct/chat models.
# "no_chat" uses v1/completion api. Use for non-instruct/chat model.
style = "multi_chat"

[test]
categories = ['biology', 'business', 'chemistry', 'computer science', 'economics', 'engineering', 'health', 'history', 'law', 'math', 'philosophy', 'physics', 'psychology', 'other']
parallel = 16

# Use chain of thoughts prompting or no.
cot = true

# Supported languages = en, id, ja, ko, zh
language = "en"

[log]
# Verbosity between 0-2
verbosity = 0
# If true, logs exact prompt sent to the model in the test result files.
log_prompt = true`;

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
  it("ships the fork's example verbatim as mmlu-pro/config.toml, reads it, and its values are the defaults", () => {
    expect(readFileSync(path.join(REPO_ROOT, 'mmlu-pro/config.toml'), 'utf8')).toBe(FORK_EXAMPLE);
    const fromExample = resolveConfig(readConfigFile(tomlFile('config.toml', FORK_EXAMPLE)));
    expect(fromExample).toEqual(resolveConfig());
    expect(fromExample.server).toEqual({
      url: 'http://localhost:8000/v1',
      api_key: 'api key',
      model: 'llama3',
      model_note: 'LORA',
      timeout: 600,
      max_retries: 5,
    });
    expect(fromExample.inference).toMatchObject({
      temperature: 0,
      top_p: 1,
      max_tokens: 1024,
      stop: '<|eot_id|>',
      stop_at_question: false,
      style: 'multi_chat',
    });
    expect(fromExample.inference.system_prompt).toBe(LANGUAGES.en.systemPrompt);
    expect(fromExample.test).toMatchObject({
      categories: [...CATEGORIES],
      parallel: 16,
      cot: true,
      language: 'en',
      scoring: 'original',
    });
    expect(fromExample.log).toMatchObject({ verbosity: 0, log_prompt: true });
    expect(DEFAULTS.test.scoring).toBe('original');
  });

  it("takes the language's system prompt when the file gives none; the language is case-sensitive", () => {
    expect(resolveConfig({}, { language: 'ja' }).inference.system_prompt).toBe(LANGUAGES.ja.systemPrompt);
    // The original's `language == "ja"` fails for "JA" (no labels: every request errors); ours says so up front.
    expect(problemsOf(() => resolveConfig({}, { language: 'JA' })).join('\n')).toMatch(/language .* got "JA"/);
    expect(LANGUAGES.id.systemPrompt).toContain("'Jawabannya adalah (pilihan jawaban)'");
    expect(Object.isFrozen(resolveConfig({ inference: { stop: ['a'] } }).inference.stop)).toBe(true);
  });

  it('lets every flag override its key', () => {
    const file = readConfigFile(path.join(REPO_ROOT, 'mmlu-pro/config.toml'));
    const values: Record<FlagName, string | number | boolean> = {
      url: 'http://127.0.0.1:9/v1',
      api: 'secret',
      model: 'other',
      model_note: 'Q4_K_M',
      timeout: 5,
      style: 'no_chat',
      stop_at_question: true,
      category: 'math',
      parallel: 3,
      cot: false,
      language: 'ko',
      scoring: 'tiger',
      subset: 7,
      data_dir: '/data',
      verbosity: 2,
      log_prompt: false,
      output_dir: '/out',
      comment: 'hello',
    };
    expect(Object.keys(values).sort()).toEqual(Object.keys(FLAG_SETTINGS).sort());
    for (const [flag, value] of Object.entries(values) as [FlagName, string | number | boolean][]) {
      const config = resolveConfig(file, { [flag]: value }) as unknown as Record<string, Record<string, unknown>>;
      const [section, key] = FLAG_SETTINGS[flag].split('.') as [string, string | undefined];
      const got = key === undefined ? config[section] : config[section]![key];
      expect(got, `--${flag}`).toEqual(flag === 'category' ? [value] : value);
    }
  });

  it('--category: a list, comma-separated or repeated, never dropping one', () => {
    expect(resolveConfig({}, { category: 'math, computer science' }).test.categories).toEqual([
      'math',
      'computer science',
    ]);
    expect(resolveConfig({}, { category: ['biology', 'law,history'] }).test.categories).toEqual([
      'biology',
      'law',
      'history',
    ]);
    expect(problemsOf(() => resolveConfig({}, { category: ['biology', 'lawyer'] })).join('\n')).toMatch(
      /unknown category "lawyer"/,
    );
    expect(problemsOf(() => resolveConfig({}, { category: 'biology,,law' })).join('\n')).toMatch(/unknown category ""/);
    expect(problemsOf(() => resolveConfig({}, { category: ['law', 'law'] })).join('\n')).toMatch(
      /names a category twice/,
    );
  });

  it('ignores unknown sections and keys as toml.load leaves them, naming each; rejects wrong types', () => {
    const unknown = tomlFile(
      'unknown.toml',
      '[server]\nhost = "x"\n[inference]\ntemprature = 0.1\nconstructor = 1\n[extra]\na = 1\n',
    );
    const warnings: string[] = [];
    const read = readConfigFile(unknown, (m) => warnings.push(m));
    expect(resolveConfig(read)).toEqual(resolveConfig());
    expect(warnings).toHaveLength(4);
    expect(warnings.join('\n')).toMatch(/ignoring unknown key "host" in \[server\]/);
    expect(warnings.join('\n')).toMatch(/ignoring unknown key "temprature" in \[inference\]/);
    expect(warnings.join('\n')).toMatch(/ignoring unknown key "constructor" in \[inference\]/);
    expect(warnings.join('\n')).toMatch(/ignoring unknown section "extra"/);
    const problems = problemsOf(() => readConfigFile(tomlFile('bad.toml', '[server]\nmodel = 3\ntimeout = "x"\n')));
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/\[server\] model must be a string/);
  });

  it('reports a TOML syntax error and a missing file', () => {
    expect(problemsOf(() => readConfigFile(tomlFile('syntax.toml', 'a = = 1')))[0]).toMatch(
      /syntax\.toml: Invalid TOML/,
    );
    expect(problemsOf(() => readConfigFile(path.join(scratch.dir, 'none.toml')))[0]).toMatch(/cannot read config file/);
  });

  it('rejects bad values: unknown category, style, language, scoring, ranges, empty model', () => {
    const problems = problemsOf(() =>
      resolveConfig(
        {},
        {
          category: 'math,astrology',
          style: 'chatty',
          language: 'fr',
          scoring: 'strict',
          parallel: 0,
          verbosity: 3,
          url: 'localhost:8000',
          subset: -1,
          model: ' ',
        },
      ),
    );
    const text = problems.join('\n');
    expect(text).toMatch(/unknown category "astrology"/);
    expect(text).toMatch(/style .* must be one of multi_chat, single_chat, no_chat/);
    expect(text).toMatch(/language .* must be one of en, id, ja, ko, zh/);
    expect(text).toMatch(/scoring .* must be one of original, no_random, tiger, lenient/);
    expect(text).toMatch(/parallel .* from 1 to 1024/);
    expect(text).toMatch(/verbosity .* 0, 1 or 2/);
    expect(text).toMatch(/url .* http\(s\) URL/);
    expect(text).toMatch(/subset .* positive integer/);
    expect(text).toMatch(/server.model \(--model\) must not be empty/);
  });

  it('keeps stop as the config gives it, a string or a list', () => {
    expect(resolveConfig({ inference: { stop: '<|im_end|>' } }).inference.stop).toBe('<|im_end|>');
    expect(resolveConfig({ inference: { stop: ['a', 'b'] } }).inference.stop).toEqual(['a', 'b']);
  });

  it('names the output folder as the original: eval_results_<language>/<model, \\W → ->-<note as it is>', () => {
    const folder = (model: string, model_note: string, language = 'en') =>
      outputFolder(resolveConfig({ server: { model, model_note }, test: { language } }));
    expect(folder('meta-llama/Llama-3.1-8B:q4', 'Q4_K_M 8k')).toBe(
      path.join('eval_results_en', 'meta-llama-Llama-3-1-8B-q4-Q4_K_M 8k'),
    );
    expect(folder('llama3', '', 'ko')).toBe(path.join('eval_results_ko', 'llama3-'));
    expect(folder('모델 1', 'x', 'zh')).toBe(path.join('eval_results_zh', '모델-1-x')); // \\w is Unicode in Python
  });
});
