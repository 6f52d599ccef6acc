// A real Hugging Face cache layout (test/hf-cache.ts): snapshots/<rev>/ files are symlinks into blobs/, refs/main
// names a revision, several revisions side by side. The locator finds the cache by default, uses the pinned revision
// of a pinned id, resolves refs, reads tensors through the links and names what is present when asked for what is not.
import { lstatSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Checkpoint, PINNED_REVISIONS, defaultCacheDir } from '../../engine/checkpoint.ts';
import { Tokenizer } from '../../engine/tokenizer.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { fixtureCheckpoint } from '../fixtures.ts';
import { addSnapshot } from '../hf-cache.ts';

const ID = 'google/gemma-3-1b-it';
const PINNED = PINNED_REVISIONS[ID]!;
const NEWER = 'a'.repeat(40);
let hub: string;

beforeAll(() => {
  hub = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-hub-')), 'hub');
  addSnapshot(hub, ID, PINNED, TOY_TARGET_DIR);
  addSnapshot(hub, ID, NEWER, fixtureCheckpoint('tiny'), ['main']); // refs/main points past the pinned revision
  addSnapshot(hub, 'someone/toy', PINNED, TOY_TARGET_DIR, ['main']);
});
afterEach(() => vi.unstubAllEnvs());

describe('a Hugging Face cache with symlinked snapshots', () => {
  it('opens the pinned revision of a pinned id by default, reading every tensor through the links into blobs/', async () => {
    const ck = Checkpoint.open({ cacheDir: hub, modelId: ID });
    expect([ck.modelId, ck.revision]).toEqual([ID, PINNED]);
    expect(ck.dir).toBe(path.join(hub, 'models--google--gemma-3-1b-it', 'snapshots', PINNED));
    expect(lstatSync(path.join(ck.dir, 'model.safetensors')).isSymbolicLink()).toBe(true);
    const direct = Checkpoint.open(TOY_TARGET_DIR);
    expect([...ck.tensors.keys()]).toEqual([...direct.tensors.keys()]);
    for (const name of ck.tensors.keys())
      expect(Buffer.from(ck.readBytes(name)).equals(Buffer.from(direct.readBytes(name)))).toBe(true);
    direct.close();
    const tokenizer = await Tokenizer.load(ck.dir);
    expect(tokenizer.chatIds([{ role: 'user', content: 'hi' }]).length).toBeGreaterThan(2);
    ck.close();
  });

  it('finds the cache from $HF_HUB_CACHE, then $HF_HOME/hub, then ~/.cache/huggingface/hub', () => {
    expect(defaultCacheDir({ HF_HUB_CACHE: '/a', HF_HOME: '/b' })).toBe('/a');
    expect(defaultCacheDir({ HF_HOME: '/b' })).toBe('/b/hub');
    expect(defaultCacheDir({ HOME: os.homedir() })).toBe(path.join(os.homedir(), '.cache', 'huggingface', 'hub'));
    vi.stubEnv('HF_HUB_CACHE', '');
    vi.stubEnv('HF_HOME', path.dirname(hub));
    const ck = Checkpoint.open({ modelId: ID });
    expect(ck.revision).toBe(PINNED);
    ck.close();
  });

  it('refuses another revision of a pinned id unless it is allowed explicitly; resolves ref names', () => {
    expect(() => Checkpoint.open({ cacheDir: hub, modelId: ID, revision: 'main' })).toThrow(
      new RegExp(
        `${ID} is pinned at revision ${PINNED}; ${NEWER} is refused unless --allow-unpinned-revision is given`,
      ),
    );
    const newer = Checkpoint.open({ cacheDir: hub, modelId: ID, revision: 'main', allowUnpinnedRevision: true });
    expect(newer.revision).toBe(NEWER);
    expect(newer.config.num_hidden_layers).toBe(6); // the tiny fixture, not the toy
    newer.close();
  });

  it('uses refs/main for an id that is not pinned', () => {
    const ck = Checkpoint.open({ cacheDir: hub, modelId: 'someone/toy' });
    expect([ck.modelId, ck.revision]).toEqual(['someone/toy', PINNED]);
    ck.close();
  });

  it('names the revisions and refs present when asked for one that is not, and the cache when the id is absent', () => {
    expect(() => Checkpoint.open({ cacheDir: hub, modelId: ID, revision: 'b'.repeat(40) })).toThrow(
      new RegExp(
        `revision b{40} is not in .*snapshots \\(have: ${NEWER}, ${PINNED}; refs: main\\); fetch it with npx iwibench download --model ${ID} --revision b{40}$`,
      ),
    );
    expect(() => Checkpoint.open({ cacheDir: hub, modelId: 'google/gemma-3-4b-it' })).toThrow(
      /google\/gemma-3-4b-it is not in the Hugging Face cache .*hub \(no models--google--gemma-3-4b-it\/; fetch it with npx iwibench download --model google\/gemma-3-4b-it, or pass --cache-dir or --model-dir\)/,
    );
  });

  it('names the missing blob of a broken link (an incomplete download) and the command that completes it', () => {
    const broken = path.join(path.dirname(hub), 'broken');
    addSnapshot(broken, ID, PINNED, TOY_TARGET_DIR);
    const snapshot = path.join(broken, 'models--google--gemma-3-1b-it', 'snapshots', PINNED);
    const blob = path.resolve(
      snapshot,
      path.join('..', '..', 'blobs', path.basename(lstatTarget(path.join(snapshot, 'model.safetensors')))),
    );
    rmSync(blob);
    expect(() => Checkpoint.open({ cacheDir: broken, modelId: ID })).toThrow(
      /snapshots\/dcc83ea8[0-9a-f]{32} is incomplete \(an interrupted download\?\): missing model\.safetensors \(it links to \.\.\/\.\.\/blobs\/[0-9a-f]{64}, which is missing\); npx iwibench download --model google\/gemma-3-1b-it completes it$/,
    );
  });
});

function lstatTarget(link: string): string {
  return path.basename(readlinkSync(link));
}
