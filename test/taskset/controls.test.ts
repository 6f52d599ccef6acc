import { describe, expect, it } from 'vitest';
import { passes, runCheck } from '../../taskset/checks/index.ts';
import { generalControls } from '../../taskset/controls.ts';
import { readData } from '../../taskset/data.ts';

describe('general controls', () => {
  it('are 64 per episode, about a third each of arithmetic, factual answers and exact copying', () => {
    const controls = generalControls(5);
    expect(controls).toHaveLength(64);
    const byType = (type: string) => controls.filter((c) => c.check.type === type).length;
    expect(byType('number')).toBe(21);
    expect(byType('contains_any')).toBe(21);
    expect(byType('copy_exact')).toBe(22);
    expect(new Set(controls.map((c) => c.id)).size).toBe(64);
    expect(controls.every((c) => c.kind === 'control' && c.messages.length === 1)).toBe(true);
  });

  it('are deterministic in the control seed and differ between seeds', () => {
    expect(JSON.stringify(generalControls(9))).toBe(JSON.stringify(generalControls(9)));
    expect(JSON.stringify(generalControls(9))).not.toBe(JSON.stringify(generalControls(10)));
  });

  it('have content-addressed ids, so a replay can tell repeated controls from new ones', () => {
    const first = new Set(generalControls(1).map((c) => c.id));
    const repeated = [2, 3, 4, 5, 6].map((seed) => generalControls(seed).filter((c) => first.has(c.id)).length);
    expect(Math.max(...repeated)).toBeGreaterThan(0); // the factual pool is finite: old controls come back
    expect(Math.min(...repeated)).toBeLessThan(32); // and most are new
    const again = generalControls(1);
    const prompts = new Map(again.map((c) => [c.id, c.messages[0]!.content]));
    for (const c of generalControls(2)) if (prompts.has(c.id)) expect(prompts.get(c.id)).toBe(c.messages[0]!.content);
  });

  it('have pristine answers that pass, and wrong answers that fail', () => {
    for (const seed of [0, 1, 2]) {
      for (const c of generalControls(seed)) {
        expect(passes(runCheck(c.check, c.pristineAnswer)), `${c.id}: ${c.pristineAnswer}`).toBe(true);
        expect(passes(runCheck(c.check, 'I am not sure.')), c.id).toBe(false);
      }
    }
  });

  it('accept a count written in words in another language, and exact copies only', () => {
    const all = Array.from({ length: 20 }, (_, seed) => generalControls(seed)).flat();
    const eight = all.find((c) => c.check.type === 'contains_any' && c.check.values[0] === '8');
    expect(eight, 'some control asks for a count of eight').toBeDefined();
    expect(passes(runCheck(eight!.check, 'Une araignée a huit pattes.'))).toBe(true);
    expect(passes(runCheck(eight!.check, 'Es sind acht.'))).toBe(true);
    expect(passes(runCheck(eight!.check, 'Sept.'))).toBe(false);
    const copy = all.find((c) => c.check.type === 'copy_exact')!;
    const text = (copy.check as { text: string }).text;
    expect(passes(runCheck(copy.check, text))).toBe(true);
    expect(passes(runCheck(copy.check, `${text}x`))).toBe(false);
    expect(passes(runCheck(copy.check, text.slice(1)))).toBe(false);
  });

  it('skip factual questions about what the edit changes on purpose', () => {
    const all = Array.from({ length: 40 }, (_, seed) => generalControls(seed)).flat();
    expect(all.some((c) => /Kenya/.test(c.messages[0]!.content))).toBe(true);
    const excluded = Array.from({ length: 40 }, (_, seed) => generalControls(seed, ['Nairobi', 'Kenya'])).flat();
    expect(excluded.some((c) => /Kenya|Nairobi/.test(c.messages[0]!.content + c.pristineAnswer))).toBe(false);
    expect(excluded.length).toBe(40 * 64);
  });

  it('come from versioned data', () => {
    expect(readData<{ version: string }>('controls.json').version).toBe('0.2.2');
  });
});
