import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  checkEditorEndpoint,
  EditorConfigError,
  publicConfig,
  resolveEditorConfig,
} from '../../../taskset/harness/index.ts';

const env = { OPENAI_API_KEY: 'sk-test' };

describe('resolveEditorConfig', () => {
  it("defaults to design.md's editor: gpt-6.1-terra over Chat Completions through the editor proxy, temperature 0, reasoning none, 4,096 tokens, 64 turns", () => {
    expect(resolveEditorConfig({}, env)).toEqual({
      model: 'gpt-6.1-terra',
      api: 'chat',
      baseUrl: 'http://127.0.0.1:8770/v1',
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

  it('needs OPENAI_API_KEY only for an API off this machine (the editor proxy holds its own), and never writes it out', () => {
    expect(resolveEditorConfig({}, {})).not.toHaveProperty('apiKey');
    expect(resolveEditorConfig({ baseUrl: 'http://localhost:8773/v1' }, {})).not.toHaveProperty('apiKey');
    expect(() => resolveEditorConfig({ baseUrl: 'https://api.openai.com/v1' }, {})).toThrow(
      /OPENAI_API_KEY is not set: editor model gpt-6.1-terra at https:\/\/api.openai.com\/v1 needs an API key/,
    );
    expect(() => resolveEditorConfig({ baseUrl: '127.0.0.1:8770' }, {})).toThrow(/must be an http\(s\) URL/);
    expect(resolveEditorConfig({ model: 'builtin:noop' }, env)).not.toHaveProperty('apiKey');
    expect(JSON.stringify(publicConfig(resolveEditorConfig({}, env)))).not.toContain('sk-test');
  });

  it('lists every problem at once', () => {
    const options = {
      baseUrl: 'https://provider.example/v1',
      api: 'completions',
      reasoningEffort: ' ',
      timeoutMs: 0,
      maxRetries: -1,
      maxTurns: 1.5,
    };
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

describe('checkEditorEndpoint', () => {
  it('passes when something answers at a local base URL; otherwise one line says to start the proxy or pass --editor-base-url', async () => {
    const listening = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const open = (listening.address() as AddressInfo).port;
    await checkEditorEndpoint(resolveEditorConfig({ baseUrl: `http://127.0.0.1:${open}/v1` }, {}));
    await new Promise((resolve) => listening.close(resolve)); // the same port, now with nothing behind it
    const error = await checkEditorEndpoint(resolveEditorConfig({ baseUrl: `http://127.0.0.1:${open}/v1` }, {})).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toBe(
      `nothing answers at http://127.0.0.1:${open}/v1 (ECONNREFUSED): start \`npx iwibench editor-proxy --port 8770\` with the editor's key in its environment (OPENAI_API_KEY), or pass --editor-base-url`,
    );
    // Editors without an API, and APIs elsewhere (the SDK's retries answer for those), are not checked.
    await checkEditorEndpoint(
      resolveEditorConfig({ model: 'builtin:noop', baseUrl: `http://127.0.0.1:${open}/v1` }, {}),
    );
    await checkEditorEndpoint(resolveEditorConfig({ baseUrl: 'https://unreachable.invalid/v1' }, env));
  });
});
