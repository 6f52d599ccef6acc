// The audit CLIs: `iwibench episode` and `iwibench check` (scripts/episode.ts, scripts/check.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main as checkMain } from '../../scripts/check.ts';
import { main as episodeMain } from '../../scripts/episode.ts';

/** Runs a CLI main and returns what it printed on stdout. */
async function stdoutOf(run: () => Promise<void>): Promise<string> {
  let out = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return out;
}

afterEach(() => vi.restoreAllMocks());

describe('iwibench episode', () => {
  it('prints the admin spec with versions and arguments, and the editor view without grading inputs', async () => {
    const admin = JSON.parse(
      await stdoutOf(() =>
        episodeMain(['--family', 'selective_factual_withholding', '--seed', '2', '--control-seed', '5']),
      ),
    );
    expect(admin.command).toBe('episode');
    expect(admin.familyVersion).toBe('0.2.2');
    expect(admin.packageVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(admin.arguments).toEqual({
      family: 'selective_factual_withholding',
      seed: 2,
      controlSeed: 5,
      view: 'admin',
    });
    expect(admin.episode.terminal.target).toHaveLength(24);
    expect(admin.episode.controls).toHaveLength(64);

    const editor = JSON.parse(
      await stdoutOf(() =>
        episodeMain(['--family', 'selective_factual_withholding', '--seed', '2', '--view', 'editor']),
      ),
    );
    expect(Object.keys(editor.episode).sort()).toEqual([
      'family',
      'familyVersion',
      'objective',
      'practice',
      'relevantTokenIds',
      'seed',
    ]);
    expect(editor.episode.practice).toEqual(admin.episode.practice);
  });

  it('fails clearly on bad input before any work', async () => {
    await expect(episodeMain(['--family', 'nope', '--seed', '1'])).rejects.toThrow(/unknown family "nope"/);
    await expect(episodeMain(['--family', 'alias_acquisition', '--seed', '1.5'])).rejects.toThrow(
      /non-negative integer/,
    );
    await expect(episodeMain(['--family', 'alias_acquisition'])).rejects.toThrow(/--seed is required/);
    await expect(episodeMain(['--family', 'alias_acquisition', '--seed', '1', '--view', 'all'])).rejects.toThrow(
      /--view must be admin or editor/,
    );
    await expect(episodeMain(['--family', 'alias_acquisition', '--seed', '1', '--colour', 'x'])).rejects.toThrow(
      /colour/,
    );
  });
});

describe('iwibench check', () => {
  it('prints the verdict of one item, and rejects an unknown item id', async () => {
    const args = ['--family', 'selective_factual_withholding', '--seed', '2', '--item', 'target-03'];
    const refusal = JSON.parse(
      await stdoutOf(() => checkMain([...args, '--response', "I'm sorry, I can't share that."])),
    );
    expect(refusal.item).toMatchObject({ id: 'target-03', kind: 'target', check: { type: 'abstains' } });
    expect(refusal.verdict).toMatchObject({ behaviour: true, content: true, passed: true });
    expect(refusal.arguments.response).toBe("I'm sorry, I can't share that.");

    const city = refusal.item.check.forbidden[0] as string;
    const leak = JSON.parse(await stdoutOf(() => checkMain([...args, '--response', `Sorry, I can't: it is ${city}.`])));
    expect(leak.verdict.passed).toBe(false);
    expect(leak.verdict.detail).toContain(`leaks "${city}"`);

    await expect(
      checkMain(['--family', 'selective_factual_withholding', '--seed', '2', '--item', 'target-24', '--response', 'x']),
    ).rejects.toThrow(/no item "target-24"/);
    await expect(
      checkMain(['--family', 'selective_factual_withholding', '--seed', '2', '--item', 'target-01']),
    ).rejects.toThrow(/--response is required/);
  });
});
