// Finding results.json files, refusing foreign or incomplete ones by name, and the --editor rule.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectResults, labelAttempts, readResults } from '../../report/collect.ts';
import { GRID, attemptFolderName, resultsFile, tempDir, writeGrid, writeRuns } from './fixtures.ts';

describe('collectResults', () => {
  it('finds every results.json under each folder, in path order, named by its attempt folder', () => {
    const runs = writeGrid(tempDir('collect'));
    const found = collectResults([runs.beta, runs.alpha]);
    expect(found.map((c) => c.file)).toEqual([
      ...GRID.filter((a) => a.editor === 'beta')
        .map((a) => path.join(runs.beta, 'attempts', attemptFolderName(a), 'results.json'))
        .sort(),
      ...GRID.filter((a) => a.editor === 'alpha')
        .map((a) => path.join(runs.alpha, 'attempts', attemptFolderName(a), 'results.json'))
        .sort(),
    ]);
    expect(found[0]!.attempt).toBe(path.basename(path.dirname(found[0]!.file)));
  });

  it('lists every schema problem of a results.json with its name', () => {
    const file = path.join(tempDir('schema'), 'results.json');
    const results = resultsFile(GRID[0]!) as unknown as {
      score: Record<string, unknown>;
      episode: Record<string, unknown>;
    };
    delete results.score.reward;
    results.episode.seed = -1;
    writeFileSync(file, JSON.stringify(results));
    expect(() => readResults(file)).toThrow(
      `${file} does not match iwibench-results/1: /episode/seed must be >= 0; /score must have required property 'reward'`,
    );
    results.score.reward = 1.5;
    results.episode.seed = 3;
    writeFileSync(file, JSON.stringify(results));
    expect(() => readResults(file)).toThrow(`${file} does not match iwibench-results/1: /score/reward must be <= 1`);
  });

  it('refuses an empty RUNS folder and a file given as RUNS', () => {
    const dir = tempDir('empty');
    expect(() => collectResults([dir])).toThrow(`RUNS folder ${dir} holds no results.json`);
    mkdirSync(path.join(dir, 'a'));
    writeFileSync(path.join(dir, 'a', 'x.txt'), '');
    expect(() => collectResults([path.join(dir, 'a', 'x.txt')])).toThrow(/is not a folder/);
  });

  it('merges the folders of several workers by attempt id, and refuses two different results for one id', () => {
    const root = tempDir('merge');
    const alpha = GRID.filter((a) => a.editor === 'alpha');
    // Machine 1 ran the first two attempts, machine 2 the rest and (a copy of) the second.
    writeRuns(path.join(root, 'one'), alpha.slice(0, 2));
    writeRuns(path.join(root, 'two'), alpha.slice(1));
    const merged = collectResults([path.join(root, 'one'), path.join(root, 'two')]);
    expect(merged.map((c) => c.attempt).sort()).toEqual(alpha.map(attemptFolderName).sort());

    // The second attempt again on machine 2, with another reward: which is the attempt's result is not for us to pick.
    const conflicting = { ...alpha[1]!, targets: { base: alpha[1]!.targets.base, edited: 0 } };
    const [dir] = writeRuns(path.join(root, 'two'), [conflicting]);
    const id = attemptFolderName(alpha[1]!);
    expect(() => collectResults([path.join(root, 'one'), path.join(root, 'two')])).toThrow(
      `attempt ${id} has two different results, ${path.join(root, 'one', 'attempts', id, 'results.json')} and ${path.join(dir!, 'results.json')}`,
    );
  });

  it("skips a half-written attempt folder (a killed worker's temp folder)", () => {
    const runs = path.join(tempDir('partial'), 'runs');
    const [dir] = writeRuns(runs, [GRID[0]!]);
    writeRuns(runs, [GRID[1]!]);
    const partial = `${path.join(runs, 'attempts', attemptFolderName(GRID[1]!))}.partial-4242-0badcafe`;
    mkdirSync(partial);
    writeFileSync(path.join(partial, 'results.json'), 'half a fi');
    expect(collectResults([runs]).map((c) => c.file)).toEqual(
      [
        path.join(dir!, 'results.json'),
        path.join(runs, 'attempts', attemptFolderName(GRID[1]!), 'results.json'),
      ].sort(),
    );
  });
});

describe('labelAttempts (--editor)', () => {
  const root = tempDir('label');
  const runs = writeGrid(root);
  const bare = path.join(root, 'bare');
  writeRuns(bare, [{ ...GRID[0]!, editor: null }]);

  it('keeps every labelled attempt when no --editor is given', () => {
    const { kept, skipped } = labelAttempts(collectResults([runs.alpha, runs.beta]), []);
    expect(kept.map((k) => k.editor).sort()).toEqual(GRID.map((g) => g.editor).sort());
    expect(skipped).toEqual([]);
  });

  it('keeps only the named editors and returns the others as skipped', () => {
    const { kept, skipped } = labelAttempts(collectResults([runs.alpha, runs.beta]), ['beta']);
    expect(new Set(kept.map((k) => k.editor))).toEqual(new Set(['beta']));
    expect(skipped.map((s) => s.results.editor?.label)).toEqual(Array(6).fill('alpha'));
    expect(() => labelAttempts(collectResults([runs.alpha]), ['gamma'])).toThrow(
      'no attempt has the editor label(s) gamma; found: alpha',
    );
  });

  it('names unlabelled results with the one --editor, and refuses to guess between several', () => {
    expect(labelAttempts(collectResults([bare]), ['gamma']).kept.map((k) => k.editor)).toEqual(['gamma']);
    expect(() => labelAttempts(collectResults([bare]), [])).toThrow(
      /has no editor label: pass exactly one --editor LABEL to name it \(given: none\)/,
    );
    expect(() => labelAttempts(collectResults([bare]), ['a', 'b'])).toThrow(
      /has no editor label: pass exactly one --editor LABEL to name it \(given: a, b\)/,
    );
  });
});
