import { describe, expect, it } from 'vitest';
import { TOOL_DEFINITIONS } from '../../../service/tools/schemas.ts';
import { describeLayerTypes, firstMessage, systemPrompt } from '../../../taskset/harness/prompt.ts';
import type { EpisodeBrief } from '../../../taskset/service-client.ts';

const brief: EpisodeBrief = {
  episode_id: 'ep1',
  family: 'lexical_inhibition',
  seed: 4,
  objective: { text: 'Never say "banana".', structured: { forms: ['banana'] } },
  target: {
    model: 'google/gemma-3-4b-it',
    revision: 'abc',
    layers: 4,
    hidden_size: 32,
    layer_types: ['sliding_attention', 'sliding_attention', 'sliding_attention', 'full_attention'],
    chat_template: 'Gemma 3',
  },
  manifest: ['model.layers.{0..3}.mlp.down_proj.weight [32,64] BF16 writable'],
  relevant_tokens: [
    { id: 10, token: '▁banana' },
    { id: 11, token: null },
    { id: 12, token: '\n' },
  ],
  practice: [],
  budget: { limits: { turns: 10, run_target_max_new_tokens: 256 }, used: { turns: 0 }, remaining: { turns: 10 } },
  limits: { maxRank: 64 },
  tools: [...TOOL_DEFINITIONS],
};

describe('the prompt', () => {
  it('first message: objective text, manifest, tokens quoted so whitespace shows, an empty practice list, budgets by scope', () => {
    const message = firstMessage(brief);
    expect(message).toMatch(/^# Objective\nNever say "banana"\.\n/);
    expect(message).toContain('model.layers.{0..3}.mlp.down_proj.weight [32,64] BF16 writable');
    expect(message).toContain('10: "▁banana"\n11: (no token)\n12: "\\n"');
    expect(message).toMatch(/# Practice examples\n.*\n\(none\)/);
    expect(message).toContain('turns: 10 per episode\nrun_target_max_new_tokens: 256 per call');
    expect(message).toContain('maxRank 64');
  });

  it('system prompt: the four tools, how the episode ends, and the turns it really has', () => {
    const prompt = systemPrompt(brief, 64);
    for (const tool of TOOL_DEFINITIONS) expect(prompt).toContain(`- ${tool.name}: `);
    expect(prompt).toContain('reply without any tool call');
    expect(prompt).toContain('after 10 turns'); // the episode's budget is below the harness's 64
    expect(systemPrompt({ ...brief, budget: { ...brief.budget, limits: { turns: 100 } } }, 64)).toContain(
      'after 64 turns',
    );
  });

  it('names the rarer layer types and calls the commonest "elsewhere"', () => {
    expect(describeLayerTypes(brief.target.layer_types)).toBe('full_attention at layer 3; sliding_attention elsewhere');
    expect(describeLayerTypes(['full_attention', 'full_attention'])).toBe('all layers full_attention');
  });
});
