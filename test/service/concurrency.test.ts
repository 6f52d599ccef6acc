import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionQueue } from '../../service/queue.ts';
import { chat, harness, type Harness } from './helpers.ts';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.app.close());

describe('serialisation and isolation', () => {
  it('the queue runs one job at a time and lets lanes take turns', async () => {
    const queue = new ExecutionQueue();
    const order: string[] = [];
    let running = 0;
    const job = (name: string) => async () => {
      running++;
      expect(running).toBe(1);
      await new Promise((r) => setTimeout(r, 2));
      order.push(name);
      running--;
      return name;
    };
    const results = await Promise.all([
      queue.run('a', job('a1')),
      queue.run('a', job('a2')),
      queue.run('a', job('a3')),
      queue.run('b', job('b1')),
      queue.run('b', job('b2')),
    ]);
    expect(results).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    // a1 starts at once; then the lanes alternate strictly: a busy lane cannot starve another.
    expect(order).toEqual(['a1', 'b1', 'a2', 'b2', 'a3']);
    const full = new ExecutionQueue(1);
    const started = full.run('x', job('x')); // starts at once
    const waiting = full.run('y', job('y')); // the one job allowed to wait
    expect(() => full.run('z', job('z'))).toThrow(/1 jobs are waiting/);
    await Promise.all([started, waiting]);
  });

  it('two episodes edited differently, run concurrently, each see only their own weights', async () => {
    const a = await h.episode();
    const b = await h.episode();
    const sequences = [chat('Tell me about the weather.'), chat('What is two plus two?')];
    const run = (e: { id: string; headers: Record<string, string> }) =>
      h.tool(e.id, e.headers, 'run_target', { sequences, max_new_tokens: 8 });
    const pristine = (await run(a)).json().result.outputs.map((o: { text: string }) => o.text);
    // Edits large enough to change greedy outputs, different in each episode.
    await h.tool(a.id, a.headers, 'write_weights', {
      op: 'scale',
      tensor: 'model.layers.2.mlp.down_proj.weight',
      slice: [[0, 32]],
      factor: -3,
    });
    await h.tool(b.id, b.headers, 'write_weights', {
      op: 'fill',
      tensor: 'model.layers.4.self_attn.v_proj.weight',
      value: 0.2,
    });
    const aloneA = (await run(a)).json().result.outputs.map((o: { text: string }) => o.text);
    const aloneB = (await run(b)).json().result.outputs.map((o: { text: string }) => o.text);
    expect(aloneA).not.toEqual(pristine);
    expect(aloneB).not.toEqual(pristine);
    expect(aloneA).not.toEqual(aloneB);
    const together = await Promise.all([run(a), run(b), run(a), run(b)]);
    expect(together.map((r) => r.json().result.outputs.map((o: { text: string }) => o.text))).toEqual([
      aloneA,
      aloneB,
      aloneA,
      aloneB,
    ]);
    // And the pristine view stays pristine.
    const c = await h.episode();
    expect((await run(c)).json().result.outputs.map((o: { text: string }) => o.text)).toEqual(pristine);
  });
});
