// A fetch's progress off a terminal (a log): what it fetches, each thing a user should know on its own line, and what
// it fetched at the end; the periodic line and the terminal's bar carry the bytes, rate and time left.
import { describe, expect, it } from 'vitest';
import { describeFetchEvent, durationText, showFetchProgress } from '../../scripts/download-progress.ts';

function collector(): NodeJS.WriteStream & { text: string } {
  const stream = { text: '', isTTY: false, write: (chunk: string) => ((stream.text += chunk), true) };
  return stream as unknown as NodeJS.WriteStream & { text: string };
}

describe('fetch progress', () => {
  it('off a terminal: the plan, a resumed file, a retry, a failed checksum, a wait, and the total at the end', () => {
    const stream = collector();
    const display = showFetchProgress('google/gemma-3-1b-it', stream);
    const events = [
      { type: 'plan', modelId: 'google/gemma-3-1b-it', commit: 'c'.repeat(40), files: 2, bytes: 3_000_000, present: 3 },
      { type: 'file', path: 'config.json', size: 900, from: 0 },
      { type: 'bytes', path: 'config.json', bytes: 900 },
      { type: 'file', path: 'model.safetensors', size: 2_999_100, from: 1_000_000 },
      { type: 'bytes', path: 'model.safetensors', bytes: 500_000 },
      { type: 'retry', path: 'model.safetensors', from: 1_500_000, reason: 'terminated' },
      { type: 'checksum', path: 'model.safetensors', got: 'a'.repeat(8), expected: 'b'.repeat(8) },
      { type: 'wait', path: 'model.safetensors' },
    ] as const;
    for (const event of events) display.onEvent(event);
    display.stop(true);
    expect(stream.text).toMatch(
      new RegExp(
        [
          `google/gemma-3-1b-it: fetching 2 files, 3\\.00 MB, at c{40} \\(3 already in the cache\\)`,
          'google/gemma-3-1b-it: model\\.safetensors: resuming at 1\\.00 MB of 3\\.00 MB',
          'google/gemma-3-1b-it: model\\.safetensors: terminated; resuming at 1\\.50 MB',
          'google/gemma-3-1b-it: model\\.safetensors: its checksum is a{8}, the Hub lists b{8}: removed, fetching it again',
          'google/gemma-3-1b-it: model\\.safetensors: another process on this machine is fetching it; waiting for it',
          'google/gemma-3-1b-it: fetched 501 kB in \\d+ s',
          '',
        ].join('\n') + '$',
      ),
    );
  });

  it('a complete snapshot says nothing; a failed fetch does not claim a total', () => {
    const stream = collector();
    const display = showFetchProgress('x', stream);
    display.onEvent({ type: 'plan', modelId: 'x', commit: 'c'.repeat(40), files: 0, bytes: 0, present: 5 });
    display.stop(true);
    const failed = showFetchProgress('x', stream);
    failed.onEvent({ type: 'plan', modelId: 'x', commit: 'c'.repeat(40), files: 1, bytes: 10, present: 0 });
    failed.onEvent({ type: 'bytes', path: 'config.json', bytes: 4 });
    failed.stop(false);
    expect(stream.text).toBe(`x: fetching 1 file, 10 B, at ${'c'.repeat(40)}\n`);
    expect(describeFetchEvent({ type: 'cached', commit: 'c', reason: 'cannot reach H (x)' })).toBe(
      "cannot reach H (x); using the cache's snapshot c",
    );
  });

  it('times left read as a person reads them', () => {
    expect([42, 200, 3720, Infinity].map(durationText)).toEqual(['42 s', '3 min 20 s', '1 h 02 min', '?']);
  });
});
