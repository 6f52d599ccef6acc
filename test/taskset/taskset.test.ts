import { beforeAll, describe, expect, it } from 'vitest';
import { Tokenizer, gemma3TokenizerDir } from '../../service/model/tokenizer.ts';
import { episodeSpec, gradedItems } from '../../taskset/episode.ts';
import { Taskset, nullHarness, type Toolset } from '../../taskset/taskset.ts';

let tokenizer: Tokenizer;
beforeAll(async () => {
  tokenizer = await Tokenizer.load(gemma3TokenizerDir());
});

const schema = { type: 'object', properties: {}, additionalProperties: false };
const toolset: Toolset = {
  tools: ['read_weights', 'write_weights', 'run_target', 'inspect_target'].map((name) => ({ name, description: `the ${name} tool`, parameters: schema })),
};

describe('Taskset and Task', () => {
  it('loads one task per (family, seed) in order, with its toolset', () => {
    const taskset = new Taskset({ tokenizer, toolset, episodes: [{ family: 'local_factual_update', seed: 2 }, { family: 'alias_acquisition', seed: 5, controlSeed: 9 }] });
    const tasks = taskset.tasks();
    expect(tasks.map((t) => t.id)).toEqual(['local_factual_update/seed=2/control-seed=2', 'alias_acquisition/seed=5/control-seed=9']);
    expect(tasks[1]!.toolset).toBe(toolset);
    expect(JSON.stringify(tasks[0]!.setup())).toBe(JSON.stringify(episodeSpec('local_factual_update', 2, { tokenizer })));
    expect(JSON.stringify(taskset.tasks()[1]!.setup())).toBe(JSON.stringify(tasks[1]!.setup()));
  });

  it('setup hands the service the full spec; the editor view hides the grading inputs', () => {
    const task = new Taskset({ tokenizer, toolset, episodes: [] }).task({ family: 'selective_factual_withholding', seed: 1 });
    expect(task.setup().terminal.target).toHaveLength(24);
    const view = task.editorView() as Record<string, unknown>;
    expect(view.terminal).toBeUndefined();
    expect(view.controls).toBeUndefined();
    expect(view.params).toBeUndefined();
  });

  it('scores and checks eligibility through the task', () => {
    const task = new Taskset({ tokenizer, toolset, episodes: [] }).task({ family: 'answer_length_control', seed: 1 });
    const items = gradedItems(task.spec);
    const base = Object.fromEntries(items.map((i) => [i.id, i.pristineAnswer]));
    const edited = Object.fromEntries(items.map((i) => [i.id, i.editedAnswer ?? i.pristineAnswer]));
    expect(task.score(base, edited).reward).toBe(1);
    expect(task.score(base, base).reward).toBe(0);
    expect(task.eligibility(base).eligible).toBe(true);
  });

  it('rejects an unknown family or a bad seed when a task loads', () => {
    const taskset = new Taskset({ tokenizer, toolset, episodes: [{ family: 'nonsense', seed: 1 }] });
    expect(() => taskset.tasks()).toThrow(/unknown family "nonsense"/);
    expect(() => taskset.task({ family: 'alias_acquisition', seed: -4 })).toThrow(/non-negative integer/);
  });
});

describe('nullHarness', () => {
  it('exposes exactly the toolset tools, frozen', () => {
    const harness = nullHarness(toolset);
    expect(harness.name).toBe('null');
    expect(harness.tools.map((t) => t.name)).toEqual(['read_weights', 'write_weights', 'run_target', 'inspect_target']);
    expect(Object.isFrozen(harness.tools)).toBe(true);
    expect(() => (harness.tools as unknown as unknown[]).push({})).toThrow();
  });

  it('refuses a toolset with a duplicate or incomplete tool', () => {
    expect(() => nullHarness({ tools: [...toolset.tools, toolset.tools[0]!] })).toThrow(/declared twice/);
    expect(() => nullHarness({ tools: [{ name: 'x', description: '', parameters: schema }] })).toThrow(/needs a name, a description/);
  });
});
