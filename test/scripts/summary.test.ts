// The words every result-writing command ends with (scripts/summary.ts): the CLI tests check them in place; this
// checks the edge cases no run reaches cheaply (nothing base-correct, failed attempts, --json).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { attemptsLine, controlsLine, printResult, scoreLine, summaryText } from '../../scripts/summary.ts';

describe('summaries', () => {
  afterEach(() => vi.restoreAllMocks());

  it('lists what was written, then the figures, one line each', () => {
    const text = summaryText('evaluate-patch', {
      wrote: [['runs/eval/results.json', 'the score']],
      figures: ['reward 0.500'],
    });
    expect(text).toBe('evaluate-patch:\n  wrote runs/eval/results.json (the score)\n  reward 0.500\n');
  });

  it('says reward, gain and retention with its counts; n/a where nothing was base-correct', () => {
    const score = {
      reward: 0.25,
      gain: 0.5,
      retention: { overall: 0.5, counts: { all: { retained: 3, baseCorrect: 6 } } },
    } as Parameters<typeof scoreLine>[0];
    expect(scoreLine(score)).toBe('reward 0.250, gain 0.500, retention 0.500 (3 of 6 base-correct items kept)');
    expect(controlsLine('new controls', { base_correct: 0, retained: 0, retention: null })).toBe(
      'new controls: retention n/a (0 of 0 base-correct kept)',
    );
  });

  it("a pilot's mean reward is over its completed attempts; failed ones are counted apart", () => {
    const attempts = [
      { status: 'complete', id: 'a', reward: 0.2 },
      { status: 'complete', id: 'b', reward: 0.4 },
      { status: 'failed', id: 'c', error: 'refused' },
    ] as const;
    expect(attemptsLine(attempts)).toBe('3 attempts, 1 failed, mean reward 0.300');
    expect(attemptsLine([{ status: 'failed', id: 'c', error: 'refused' }])).toBe(
      '1 attempt, 1 failed, mean reward n/a',
    );
  });

  it('--json prints the document instead of the summary', () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const document = { results: 'r.json', score: { reward: 1 } };
    printResult(true, 'run-prime', document, { wrote: [['r.json', 'the score']] });
    printResult(false, 'run-prime', document, { wrote: [['r.json', 'the score']] });
    expect(write.mock.calls.map(([text]) => text)).toEqual([
      `${JSON.stringify(document)}\n`,
      'run-prime:\n  wrote r.json (the score)\n',
    ]);
  });
});
