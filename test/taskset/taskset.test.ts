import { beforeAll, describe, expect, it } from 'vitest';
import { gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import { TOOL_DEFINITIONS } from '../../service/tools/schemas.ts';
import { editorView, gradedItems } from '../../taskset/episode.ts';
import { SERVICE_TOOLSET, Taskset, defineToolset } from '../../taskset/taskset.ts';

let tokenizer: Tokenizer;
let taskset: Taskset;
beforeAll(async () => {
  tokenizer = await Tokenizer.load(gemma3TokenizerDir());
  taskset = new Taskset({ tokenizer });
});

describe('Taskset and Task', () => {
  it('loads the task of (family, seed, control seed) with the taskset’s toolset; loading twice gives equal tasks', () => {
    const task = taskset.task({ family: 'local_factual_update', seed: 2 });
    // The episode asked for, at the sizes docs/benchmark.md gives, its controls drawn from the episode seed by default.
    expect(task.spec).toMatchObject({
      family: 'local_factual_update',
      familyVersion: '0.2.2',
      seed: 2,
      controlSeed: 2,
    });
    const { terminal, controls, practice } = task.spec;
    expect(
      [terminal.target, terminal.preservation, terminal.override, controls, practice].map((l) => l.length),
    ).toEqual([24, 24, 8, 64, 8]);
    expect(task.toolset).toBe(taskset.toolset);
    expect(taskset.toolset).toBe(SERVICE_TOOLSET);
    const other = taskset.task({ family: 'alias_acquisition', seed: 5, controlSeed: 9 });
    expect(other.spec.controlSeed).toBe(9);
    expect(JSON.stringify(taskset.task({ family: 'alias_acquisition', seed: 5, controlSeed: 9 }).spec)).toBe(
      JSON.stringify(other.spec),
    );
  });

  it('setup hands the service the editor view in the wire form, never a grading input', () => {
    const task = taskset.task({ family: 'selective_factual_withholding', seed: 1 });
    const view = editorView(task.spec);
    const setup = task.setup() as Record<string, unknown>;
    const { family, seed, objective, relevantTokenIds, practice } = view;
    expect(setup).toEqual({ family, seed, objective, relevant_token_ids: relevantTokenIds, practice });
    for (const hidden of ['terminal', 'controls', 'params', 'paramsKey']) expect(setup[hidden]).toBeUndefined();
  });

  it('scores and checks eligibility through the task', () => {
    const task = taskset.task({ family: 'answer_length_control', seed: 1 });
    const items = gradedItems(task.spec);
    const base = Object.fromEntries(items.map((i) => [i.id, i.pristineAnswer]));
    const edited = Object.fromEntries(items.map((i) => [i.id, i.editedAnswer ?? i.pristineAnswer]));
    expect(task.score(base, edited).reward).toBe(1);
    expect(task.score(base, base).reward).toBe(0);
    expect(task.eligibility(base).eligible).toBe(true);
  });

  it('subset keeps the first n items of each kind; withControls swaps the general controls; both keep the toolset', () => {
    const task = taskset.task({ family: 'lexical_inhibition', seed: 3 });
    expect(task.subset(undefined)).toBe(task);
    const small = task.subset(2);
    expect(gradedItems(small.spec).map((i) => i.id)).toEqual([
      ...['target', 'preservation', 'override'].flatMap((kind) => [`${kind}-00`, `${kind}-01`]),
      ...task.spec.controls.slice(0, 2).map((c) => c.id),
    ]);
    expect(small.toolset).toBe(task.toolset);
    expect(() => task.subset(0)).toThrow(/items per kind must be a positive integer, got 0/);
    const replayed = task.withControls(
      taskset.task({ family: 'lexical_inhibition', seed: 3, controlSeed: 7 }).spec.controls,
    );
    expect(replayed.spec.controls).not.toEqual(task.spec.controls);
    expect(replayed.spec.terminal).toEqual(task.spec.terminal);
    expect(replayed.toolset).toBe(task.toolset);
  });

  it('rejects an unknown family or a bad seed when a task loads', () => {
    expect(() => taskset.task({ family: 'nonsense', seed: 1 })).toThrow(/unknown family "nonsense"/);
    expect(() => taskset.task({ family: 'alias_acquisition', seed: -4 })).toThrow(/non-negative integer/);
  });
});

describe('Toolset', () => {
  it('the service toolset is the four tools the service validates calls against, frozen', () => {
    expect(SERVICE_TOOLSET.tools.map((t) => t.name)).toEqual([
      'read_weights',
      'write_weights',
      'run_target',
      'inspect_target',
    ]);
    SERVICE_TOOLSET.tools.forEach((tool, i) => expect(tool).toBe(TOOL_DEFINITIONS[i]));
    expect(Object.isFrozen(SERVICE_TOOLSET) && Object.isFrozen(SERVICE_TOOLSET.tools)).toBe(true);
    expect(() => (SERVICE_TOOLSET.tools as unknown as unknown[]).push({})).toThrow();
  });

  it('refuses a toolset with a duplicate or incomplete tool', () => {
    expect(() => defineToolset([...TOOL_DEFINITIONS, TOOL_DEFINITIONS[0]!])).toThrow(/declared twice/);
    expect(() => defineToolset([{ ...TOOL_DEFINITIONS[0]!, description: '' }])).toThrow(/needs a name, a description/);
  });
});
