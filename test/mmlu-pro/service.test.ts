// The capability cost of a patch: the MMLU-Pro runner against our own service, pristine and patched targets.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareFolders } from '../../mmlu-pro/compare.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { ADMIN, TOKENS, harness, type Harness } from '../service/helpers.ts';
import { scratchDir, testConfig } from './helpers.ts';

let h: Harness;
let url: string;
let patched: string;
beforeAll(async () => {
  h = await harness();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  const e = await h.episode();
  await h.tool(e.id, e.headers, 'write_weights', {
    op: 'scale',
    tensor: 'model.layers.3.mlp.down_proj.weight',
    slice: [[0, 48]],
    factor: -5,
  });
  patched = (await h.app.inject({ method: 'POST', url: `/episodes/${e.id}/submit`, headers: e.headers })).json().model;
});
afterAll(() => h.app.close());

describe('MMLU-Pro against the service: pristine vs patched', () => {
  it('runs both targets through the OpenAI-compatible endpoint and compares them question by question', async () => {
    const scratch = scratchDir();
    const settings = { api: TOKENS.admin, category: 'math,law', subset: 3, parallel: 2 };
    const file = { inference: { max_tokens: 12 } }; // a random tiny target rambles: keep answers short
    const pristine = await runMmluPro(
      testConfig(url, `${scratch.dir}/pristine`, { ...settings, model: 'iwibench/tiny' }, file),
    );
    const edited = await runMmluPro(testConfig(url, `${scratch.dir}/patched`, { ...settings, model: patched }, file));
    for (const run of [pristine, edited]) {
      expect(run.failed).toEqual([]);
      expect(run.overall.total).toBe(6);
      expect(run.asked).toBe(6);
      expect(run.tokens!.completion.total).toBeGreaterThan(0);
    }
    const comparison = compareFolders(pristine.output_dir, edited.output_dir);
    expect(comparison.overall.paired).toBe(6);
    expect(comparison.overall.a_correct).toBe(pristine.overall.correct);
    expect(comparison.overall.b_correct).toBe(edited.overall.correct);
    expect(comparison.settings_differences.join(' ')).toMatch(/model/);
    // The endpoint really served two different weight sets.
    const ask = async (model: string) =>
      (
        await h.app.inject({
          method: 'POST',
          url: '/v1/chat/completions',
          headers: ADMIN,
          payload: { model, messages: [{ role: 'user', content: 'Question: 2+2?' }], max_tokens: 8 },
        })
      ).json().choices[0].message.content;
    expect(await ask(patched)).not.toBe(await ask('iwibench/tiny'));
    scratch.remove();
  });
});
