import { describe, expect, it } from 'vitest';
import { EditorConfigError, publicConfig, resolveEditorConfig } from '../../../taskset/harness/index.ts';

const env = { OPENAI_API_KEY: 'sk-test' };

describe('resolveEditorConfig', () => {
  it("defaults to design.md's editor: gpt-6.1-terra over Chat Completions, temperature 0, reasoning none, 4,096 tokens, 64 turns", () => {
    expect(resolveEditorConfig({}, env)).toEqual({
      model: 'gpt-6.1-terra',
      api: 'chat',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'sk-test',
      reasoningEffort: 'none',
      maxOutputTokens: 4096,
      temperature: 0,
      maxTurns: 64,
      timeoutMs: 600_000,
      maxRetries: 2,
    });
    // Absent options, as a command passes them when its flags are not given.
    expect(
      resolveEditorConfig(
        { model: 'gpt-6.1-terra', baseUrl: undefined, api: undefined, reasoningEffort: undefined },
        env,
      ),
    ).toEqual(resolveEditorConfig({}, env));
  });

  it('chooses the Responses API by model (reasoning effort low, no temperature); --api overrides either way', () => {
    for (const model of ['gpt-6.1-sol', 'gpt-6-astra']) {
      const config = resolveEditorConfig({ model }, env);
      expect(config).toMatchObject({ api: 'responses', reasoningEffort: 'low', maxOutputTokens: 4096 });
      expect(config).not.toHaveProperty('temperature');
    }
    expect(resolveEditorConfig({ model: 'gpt-6.1-sol', api: 'chat' }, env)).toMatchObject({
      api: 'chat',
      temperature: 0,
      reasoningEffort: 'low',
    });
    const other = resolveEditorConfig({ model: 'some-reasoner', api: 'responses', reasoningEffort: 'high' }, env);
    expect(other).toMatchObject({ api: 'responses', reasoningEffort: 'high' });
    expect(resolveEditorConfig({ model: 'some-reasoner', api: 'responses' }, env)).not.toHaveProperty(
      'reasoningEffort',
    );
  });

  it("sends no reasoning effort to any other Chat model (the provider's default) unless one is asked for", () => {
    const other = resolveEditorConfig({ model: 'deepseek-chat', baseUrl: 'https://api.deepseek.com/v1' }, env);
    expect(other).toMatchObject({ api: 'chat', temperature: 0, maxOutputTokens: 4096 });
    expect(other).not.toHaveProperty('reasoningEffort');
    expect(resolveEditorConfig({ model: 'deepseek-chat', reasoningEffort: 'high' }, env)).toMatchObject({
      reasoningEffort: 'high',
    });
    // The default editor keeps design.md's setting wherever it is served.
    expect(resolveEditorConfig({ baseUrl: 'http://proxy/v1' }, env)).toMatchObject({
      model: 'gpt-6.1-terra',
      reasoningEffort: 'none',
    });
  });

  it('drops reasoning_effort with `omit`, for providers that refuse it; takes the base URL from the flag, then OPENAI_BASE_URL', () => {
    expect(resolveEditorConfig({ reasoningEffort: 'omit' }, env)).not.toHaveProperty('reasoningEffort');
    expect(resolveEditorConfig({}, { ...env, OPENAI_BASE_URL: 'http://env/v1' }).baseUrl).toBe('http://env/v1');
    expect(
      resolveEditorConfig({ baseUrl: 'http://flag/v1' }, { ...env, OPENAI_BASE_URL: 'http://env/v1' }).baseUrl,
    ).toBe('http://flag/v1');
  });

  it('needs OPENAI_API_KEY for an API editor only, and never writes it out', () => {
    expect(() => resolveEditorConfig({}, {})).toThrow(/OPENAI_API_KEY is not set/);
    expect(resolveEditorConfig({ model: 'builtin:noop' }, env)).not.toHaveProperty('apiKey');
    expect(JSON.stringify(publicConfig(resolveEditorConfig({}, env)))).not.toContain('sk-test');
  });

  it('lists every problem at once', () => {
    const options = { api: 'completions', reasoningEffort: ' ', timeoutMs: 0, maxRetries: -1, maxTurns: 1.5 };
    try {
      resolveEditorConfig(options, {});
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(EditorConfigError);
      const { problems } = error as EditorConfigError;
      expect(problems).toHaveLength(6);
      expect(problems.join('\n')).toMatch(
        /--api must be one of chat, responses, got "completions"[^]*--reasoning-effort[^]*maxTurns[^]*timeoutMs[^]*maxRetries[^]*OPENAI_API_KEY/,
      );
    }
  });
});
