import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetLedger, resolveBudgets } from '../../service/budgets.ts';
import { chat, harness, type Harness } from './helpers.ts';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.app.close());

describe('BudgetLedger', () => {
  it('checks a whole call before charging and names the budget and what is left', () => {
    const ledger = new BudgetLedger(resolveBudgets({ tool_calls: 2, forward_tokens: 100 }));
    ledger.check({ tool: 'run_target', sequences: 1, evaluations: 1, maxNewTokens: 10, forwardTokens: 60 });
    ledger.charge({ tool: 'run_target', sequences: 1, evaluations: 1, maxNewTokens: 10, forwardTokens: 60 }, 45);
    expect(ledger.use.forward_tokens).toBe(45);
    expect(() =>
      ledger.check({ tool: 'run_target', sequences: 1, evaluations: 1, maxNewTokens: 10, forwardTokens: 60 }),
    ).toThrow(
      /budget forward_tokens exceeded: this call needs 60 against a per episode limit of 100 \(55 left\); nothing was charged/,
    );
    expect(ledger.use.tool_calls).toBe(1);
    expect(() => resolveBudgets({ bogus: 1 } as never)).toThrow(/unknown budget "bogus"/);
  });
});

describe('budgets through the tools', () => {
  it('run_target: reserves prompt + max_new_tokens, charges what was evaluated; compare_base counts twice', async () => {
    const { id, headers } = await h.episode();
    const prompt = h.target.promptIds(chat('Count to three.'));
    const response = await h.tool(id, headers, 'run_target', {
      sequences: [chat('Count to three.')],
      max_new_tokens: 6,
      compare_base: true,
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    const generated = body.result.outputs[0].output_tokens + body.result.outputs[0].base.output_tokens;
    expect(body.result.forward_tokens).toBe(2 * prompt.length + generated);
    expect(body.budget.used).toMatchObject({
      tool_calls: 1,
      run_target_calls: 1,
      run_target_sequence_evaluations: 2,
      forward_tokens: 2 * prompt.length + generated,
    });
    expect(body.budget.remaining.forward_tokens).toBe(262_144 - (2 * prompt.length + generated));
  });

  it('run_target: a call whose reservation does not fit is refused, and nothing is charged', async () => {
    const prompt = h.target.promptIds(chat('Hi'));
    const { id, headers } = await h.episode({ budgets: { forward_tokens: prompt.length + 10 } });
    const refused = await h.tool(id, headers, 'run_target', { sequences: [chat('Hi')], max_new_tokens: 11 });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({
      code: 'BUDGET_EXHAUSTED',
      budget: { used: { tool_calls: 0, forward_tokens: 0 } },
    });
    expect(refused.json().message).toMatch(/forward_tokens exceeded: this call needs \d+ .* \(\d+ left\)/);
    const admitted = await h.tool(id, headers, 'run_target', { sequences: [chat('Hi')], max_new_tokens: 10 });
    expect(admitted.statusCode).toBe(200);
  });

  it('run_target: calls, sequences per call and sequence evaluations', async () => {
    const { id, headers } = await h.episode({
      budgets: { run_target_calls: 2, run_target_sequences_per_call: 2, run_target_sequence_evaluations: 3 },
    });
    const three = await h.tool(id, headers, 'run_target', {
      sequences: [chat('a'), chat('b'), chat('c')],
      max_new_tokens: 1,
    });
    expect(three.json().message).toMatch(
      /run_target_sequences_per_call exceeded: this call needs 3 against a per call limit of 2/,
    );
    expect(three.json().budget_exceeded).toEqual({
      kind: 'run_target_sequences_per_call',
      scope: 'per call',
      value: 3,
      limit: 2,
      remaining: 2,
    });
    expect(
      (await h.tool(id, headers, 'run_target', { sequences: [chat('a'), chat('b')], max_new_tokens: 1 })).statusCode,
    ).toBe(200);
    const compare = await h.tool(id, headers, 'run_target', {
      sequences: [chat('a')],
      max_new_tokens: 1,
      compare_base: true,
    });
    expect(compare.json().message).toMatch(/run_target_sequence_evaluations exceeded: this call needs 2 .* \(1 left\)/);
    expect((await h.tool(id, headers, 'run_target', { sequences: [chat('a')], max_new_tokens: 1 })).statusCode).toBe(
      200,
    );
    const spent = (await h.tool(id, headers, 'run_target', { sequences: [chat('a')], max_new_tokens: 1 })).json();
    expect(spent.message).toMatch(/run_target_calls exceeded/);
    expect(spent.budget_exceeded).toMatchObject({ kind: 'run_target_calls', scope: 'per episode', remaining: 0 });
  });

  it('inspect_target: calls, layers, positions and evaluations; prefix tokens count on every evaluation', async () => {
    const { id, headers } = await h.episode({
      budgets: {
        inspect_target_calls: 2,
        inspect_target_layers: 1,
        inspect_target_positions: 4,
        inspect_target_sequence_evaluations: 3,
      },
    });
    const sequence = { ...chat('Who wrote Hamlet?'), continuation: 'William Shakespeare' };
    const length = h.target.promptIds(chat('Who wrote Hamlet?'), 'William Shakespeare').length;
    expect(
      (await h.tool(id, headers, 'inspect_target', { sequences: [sequence], layers: [0, 1] })).json().message,
    ).toMatch(/inspect_target_layers exceeded: this call needs 2/);
    expect(
      (await h.tool(id, headers, 'inspect_target', { sequences: [sequence], positions: [0, 5] })).json().message,
    ).toMatch(/inspect_target_positions exceeded: this call needs 5/);
    const ok = await h.tool(id, headers, 'inspect_target', {
      sequences: [sequence, sequence],
      layers: [1],
      positions: [-4, -1],
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().budget.used).toMatchObject({
      inspect_target_calls: 1,
      inspect_target_sequence_evaluations: 2,
      forward_tokens: 2 * length,
      tool_calls: 1,
    });
    expect((await h.tool(id, headers, 'inspect_target', { sequences: [sequence, sequence] })).json().message).toMatch(
      /inspect_target_sequence_evaluations exceeded/,
    );
  });

  it('tool calls and turns run out; reverting never restores a budget', async () => {
    const { id, headers } = await h.episode({ budgets: { tool_calls: 3, turns: 1 } });
    const fill = { op: 'fill', tensor: 'model.norm.weight', slice: [[0, 2]], value: 0.25 };
    expect((await h.tool(id, headers, 'write_weights', fill)).json().budget.used.tool_calls).toBe(1);
    expect((await h.tool(id, headers, 'write_weights', { op: 'revert' })).json().result.opCount).toBe(0);
    const third = await h.tool(id, headers, 'read_weights', { op: 'summary', tensor: 'model.norm.weight' });
    expect(third.json().budget.used.tool_calls).toBe(3);
    const fourth = await h.tool(id, headers, 'read_weights', { op: 'metadata' });
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json().message).toMatch(/tool_calls exceeded: .* limit of 3 \(0 left\)/);
    expect((await h.app.inject({ method: 'POST', url: `/episodes/${id}/turn`, headers })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'POST', url: `/episodes/${id}/turn`, headers })).json().message).toMatch(
      /turns exceeded/,
    );
  });

  it('does not charge refused input, and refused writes change nothing', async () => {
    const { id, headers } = await h.episode();
    const before = (
      await h.tool(id, headers, 'read_weights', {
        op: 'slice',
        tensor: 'model.layers.0.mlp.up_proj.weight',
        slice: [0, [0, 4]],
      })
    ).json();
    const cases: [unknown, number, RegExp][] = [
      [{ op: 'fill', tensor: 'model.nope.weight', value: 1 }, 404, /no tensor named "model\.nope\.weight"/],
      [
        { op: 'fill', tensor: 'model.layers.0.mlp.up_proj.weight', slice: [[0, 999]], value: 1 },
        422,
        /stop 999 is outside/,
      ],
      [
        { op: 'replace', tensor: 'model.layers.0.mlp.up_proj.weight', slice: [0, [0, 4]], values: [1, 2, 3] },
        422,
        /shape/,
      ],
      [
        { op: 'fill', tensor: 'model.layers.0.mlp.up_proj.weight', slice: [0, [0, 4]], value: 1e39 },
        422,
        /BF16|finite|Inf/i,
      ],
      [
        {
          op: 'replace',
          tensor: 'model.layers.0.mlp.up_proj.weight',
          slice: [0, [0, 4]],
          values: { handle: 'h999999' },
        },
        404,
        /no array handle "h999999"/,
      ],
      [
        { op: 'fill', tensor: 'model.layers.0.mlp.up_proj.weight', value: 1, colour: 'red' },
        400,
        /additional properties \("colour"\)/,
      ],
      [{ op: 'fill', tensor: 'model.layers.0.mlp.up_proj.weight', value: '1' }, 400, /must be number/],
    ];
    for (const [payload, status, message] of cases) {
      const response = await h.tool(id, headers, 'write_weights', payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(status);
      expect(response.json().message).toMatch(message);
    }
    const malformed = await h.app.inject({
      method: 'POST',
      url: `/episodes/${id}/tools/write_weights`,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"op": "fill", ',
    });
    expect(malformed.statusCode).toBe(400);
    const huge = await h.app.inject({
      method: 'POST',
      url: `/episodes/${id}/tools/write_weights`,
      headers,
      payload: { op: 'replace', tensor: 'model.embed_tokens.weight', values: new Array(3_000_000).fill(0.5) },
    });
    expect(huge.statusCode).toBe(413);
    const after = (
      await h.tool(id, headers, 'read_weights', {
        op: 'slice',
        tensor: 'model.layers.0.mlp.up_proj.weight',
        slice: [0, [0, 4]],
      })
    ).json();
    expect(after.result.values).toEqual(before.result.values);
    expect(after.budget.used.tool_calls).toBe(2); // the two reads; no refused call was charged
    const summary = (
      await h.app.inject({
        method: 'GET',
        url: `/episodes/${id}`,
        headers: { authorization: 'Bearer admin-secret-token' },
      })
    ).json();
    expect(summary.op_count).toBe(0);
  });
});
