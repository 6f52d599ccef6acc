// The pinned checkpoint fetched into the Hugging Face cache (engine/hub/) from a test double of the Hub that speaks
// its protocol (test/hub-server.ts, found through HF_ENDPOINT), serving the toy target laid out as the pinned 1B
// repository (gated) and the tiny 4B-layout checkpoint as the sharded 4B one. What huggingface_hub lays out is read
// back by the cache reader (Checkpoint.open); every refusal is one line that says what to do and leaves nothing.
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Checkpoint,
  PINNED_REVISIONS,
  Tokenizer,
  fetchCheckpoint,
  hubSettings,
  type FetchEvent,
} from '../../engine/index.ts';
import { HubError } from '../../engine/hub/errors.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { fixtureCheckpoint } from '../fixtures.ts';
import { filesOf, startHubServer, type HubServer } from '../hub-server.ts';

const ONE_B = 'google/gemma-3-1b-it';
const FOUR_B = 'google/gemma-3-4b-it';
const PINNED_1B = PINNED_REVISIONS[ONE_B]!;
const PINNED_4B = PINNED_REVISIONS[FOUR_B]!;
const OTHER = 'c'.repeat(40);
const GRANTED = 'hf_granted0123456789';
const NOT_GRANTED = 'hf_someoneelse987654';

const toy = filesOf(TOY_TARGET_DIR); // with loss.csv and training.json, which a checkpoint fetch leaves out
const repo1b = {
  ...toy,
  'README.md': Buffer.from('---\nlicense: gemma\n---\n'),
  '.gitattributes': Buffer.from('*.safetensors filter=lfs diff=lfs merge=lfs -text\n'),
};
const shards = filesOf(fixtureCheckpoint('tiny-4b'));
const repo4b = {
  ...shards,
  'added_tokens.json': Buffer.alloc(0), // an empty file: its blob is the empty git blob
  'preprocessor_config.json': Buffer.from('{}'),
  'extra.safetensors': Buffer.from('x'),
};
const WANTED_1B = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];

let hub: HubServer;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'iwibench-hub-fetch-'));
  hub = await startHubServer({
    repos: [
      {
        id: ONE_B,
        commits: { [PINNED_1B]: repo1b, [OTHER]: toy },
        refs: { main: OTHER },
        gated: true,
        granted: [GRANTED],
      },
      { id: FOUR_B, commits: { [PINNED_4B]: repo4b }, refs: { main: PINNED_4B } },
      { id: 'someone/toy', commits: { [OTHER]: toy }, refs: { main: OTHER, v1: OTHER } },
      {
        id: 'someone/huge',
        commits: { [OTHER]: toy },
        refs: { main: OTHER },
        listedSizes: { 'model.safetensors': 1e18 },
      },
      { id: 'someone/no-weights', commits: { [OTHER]: { 'config.json': toy['config.json']! } }, refs: { main: OTHER } },
    ],
    tokens: [NOT_GRANTED],
  });
});
afterAll(() => hub.close());

let caches = 0;
/** A fresh, empty cache, and the environment that points at the test Hub (HF_TOKEN the granted one unless given). */
function setup(env: Record<string, string | undefined> = {}) {
  const cacheDir = path.join(root, `cache-${caches++}`, 'hub');
  return {
    cacheDir,
    env: { HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir, HF_TOKEN: GRANTED, HF_HOME: path.join(root, 'home'), ...env },
  };
}

/** Runs a fetch, collecting its events; a failure is returned, not thrown. */
async function fetchWith(options: Omit<Parameters<typeof fetchCheckpoint>[0], 'onEvent'>) {
  const events: FetchEvent[] = [];
  const result = await fetchCheckpoint({ retryDelayMs: 0, ...options, onEvent: (e) => events.push(e) }).catch(
    (error: unknown) => error as Error,
  );
  return { result, events };
}

/** Every file under a folder, relative, with what a link points at. */
function tree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .sort()
    .map((name) => {
      const file = path.join(dir, name);
      const stat = lstatSync(file);
      return stat.isSymbolicLink() ? `${name} -> ${readlinkSync(file)}` : stat.isDirectory() ? `${name}/` : name;
    });
}

/** A port nothing listens on (one just given up). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const gitOid = (bytes: Buffer) => createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
const repoDir = (cacheDir: string, id: string) => path.join(cacheDir, `models--${id.replace('/', '--')}`);
const requestsSince = (n: number) => hub.requests.slice(n);

describe('a first fetch lays the checkpoint out as huggingface_hub does, and the cache reader opens it', () => {
  it('fetches only what the decoder and tokenizer need, each blob checked, into blobs/ with relative links', async () => {
    const { cacheDir, env } = setup();
    const { result, events } = await fetchWith({ modelId: ONE_B, env });
    if (result instanceof Error) throw result;
    expect(result.commit).toBe(PINNED_1B);
    expect([...result.fetched].sort()).toEqual(WANTED_1B);
    const repo = repoDir(cacheDir, ONE_B);
    const blob = (file: string) => (file.endsWith('.safetensors') ? sha256(toy[file]!) : gitOid(toy[file]!));
    expect(tree(repo)).toEqual([
      'blobs/',
      ...WANTED_1B.map((f) => `blobs/${blob(f)}`).sort(),
      'snapshots/',
      `snapshots/${PINNED_1B}/`,
      ...WANTED_1B.map((f) => `snapshots/${PINNED_1B}/${f} -> ../../blobs/${blob(f)}`),
    ]); // no refs/: a commit was asked for; no README, loss.csv or .incomplete
    for (const file of WANTED_1B) expect(readFileSync(path.join(result.dir, file)).equals(toy[file]!)).toBe(true);
    const plan = events.find((e) => e.type === 'plan');
    expect(plan).toEqual({
      type: 'plan',
      modelId: ONE_B,
      commit: PINNED_1B,
      files: 5,
      bytes: WANTED_1B.reduce((sum, f) => sum + toy[f]!.length, 0),
      present: 0,
    });
    expect(
      events.filter((e) => e.type === 'bytes').reduce((sum, e) => sum + (e.type === 'bytes' ? e.bytes : 0), 0),
    ).toBe(plan!.type === 'plan' ? plan!.bytes : -1);
    // Read back by the existing reader, by id from the environment's cache, tensor for tensor the toy's.
    const opened = Checkpoint.open({ cacheDir, modelId: ONE_B });
    const direct = Checkpoint.open(TOY_TARGET_DIR);
    expect([opened.modelId, opened.revision]).toEqual([ONE_B, PINNED_1B]);
    for (const name of direct.tensors.keys())
      expect(Buffer.from(opened.readBytes(name)).equals(Buffer.from(direct.readBytes(name)))).toBe(true);
    opened.close();
    direct.close();
    expect((await Tokenizer.load(result.dir)).chatIds([{ role: 'user', content: 'hi' }]).length).toBeGreaterThan(2);
    // The token went with every request to the gated repository.
    const resolves = hub.requests.filter((r) => r.path.startsWith(`/${ONE_B}/resolve/${PINNED_1B}/`));
    expect(resolves.length).toBeGreaterThanOrEqual(5);
    expect(resolves.every((r) => r.authorization === `Bearer ${GRANTED}`)).toBe(true);
  });

  it('a second run fetches nothing and asks the Hub nothing', async () => {
    const { env } = setup();
    await fetchWith({ modelId: ONE_B, env });
    const before = hub.requests.length;
    const { result, events } = await fetchWith({ modelId: ONE_B, env });
    expect(result).toMatchObject({ commit: PINNED_1B, fetched: [], fetchedBytes: 0 });
    expect(events).toEqual([]);
    expect(requestsSince(before)).toEqual([]);
  });

  it('a branch is resolved to its commit and written to refs/ (no newline), as huggingface_hub does', async () => {
    const { cacheDir, env } = setup();
    const { result } = await fetchWith({ modelId: 'someone/toy', revision: 'v1', env });
    expect(result).toMatchObject({ commit: OTHER });
    expect(readFileSync(path.join(repoDir(cacheDir, 'someone/toy'), 'refs', 'v1'), 'utf8')).toBe(OTHER);
    expect(Checkpoint.open({ cacheDir, modelId: 'someone/toy', revision: 'v1' }).revision).toBe(OTHER);
  });

  it('a sharded checkpoint: the index and the shards it names (not other weights or the image processor), an empty file', async () => {
    const { cacheDir, env } = setup();
    const { result } = await fetchWith({ modelId: FOUR_B, env: { ...env, HF_TOKEN: undefined } });
    if (result instanceof Error) throw result;
    expect([...result.fetched].sort()).toEqual([...Object.keys(shards), 'added_tokens.json'].sort());
    const empty = path.join(repoDir(cacheDir, FOUR_B), 'blobs', 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
    expect(statSync(empty).size).toBe(0);
    const opened = Checkpoint.open({ cacheDir, modelId: FOUR_B });
    expect(opened.revision).toBe(PINNED_4B);
    opened.close();
  });

  it('two fetches of one checkpoint at once fetch each blob once (the second waits for the first)', async () => {
    const { cacheDir, env } = setup();
    const before = hub.served.get('model.safetensors') ?? 0;
    const [a, b] = await Promise.all([fetchWith({ modelId: ONE_B, env }), fetchWith({ modelId: ONE_B, env })]);
    expect(hub.served.get('model.safetensors')! - before).toBe(toy['model.safetensors']!.length);
    expect([...a.events, ...b.events].filter((e) => e.type === 'wait').length).toBeGreaterThan(0);
    expect(Checkpoint.open({ cacheDir, modelId: ONE_B }).revision).toBe(PINNED_1B);
  });
});

describe('an interrupted fetch resumes', () => {
  it('a connection dropped mid-file is resumed from where it stopped, with a Range request', async () => {
    const { cacheDir, env } = setup();
    hub.faults.push({ file: 'model.safetensors', kind: 'drop', afterBytes: 1_000_000, times: 1 });
    const before = hub.requests.length;
    const { result, events } = await fetchWith({ modelId: ONE_B, env });
    if (result instanceof Error) throw result;
    const retry = events.find((e) => e.type === 'retry');
    expect(retry).toMatchObject({ type: 'retry', path: 'model.safetensors' });
    expect(retry).toMatchObject({ from: 1_000_000 }); // every byte received was kept
    expect(
      requestsSince(before)
        .filter((r) => r.path.startsWith('/cdn/'))
        .map((r) => r.range),
    ).toContain('bytes=1000000-');
    expect(Checkpoint.open({ cacheDir, modelId: ONE_B }).revision).toBe(PINNED_1B);
  });

  it('a connection that stalls (HF_HUB_DOWNLOAD_TIMEOUT without a byte) is given up and resumed', async () => {
    const { cacheDir, env } = setup({ HF_HUB_DOWNLOAD_TIMEOUT: '0.2' });
    hub.faults.push({ file: 'model.safetensors', kind: 'stall', afterBytes: 500_000, times: 1 });
    const { result, events } = await fetchWith({ modelId: ONE_B, env });
    if (result instanceof Error) throw result;
    expect(events.find((e) => e.type === 'retry')).toMatchObject({ reason: 'no data for 0.2 s' });
    expect(Checkpoint.open({ cacheDir, modelId: ONE_B }).revision).toBe(PINNED_1B);
  });

  it('a run that gives up keeps the partial blob, which the next run resumes; meanwhile the reader names the download', async () => {
    const { cacheDir, env } = setup();
    hub.faults.push({ file: 'model.safetensors', kind: 'drop', afterBytes: 700_000, times: 1 });
    const first = await fetchWith({ modelId: ONE_B, env, retries: 0 });
    expect(first.result).toBeInstanceOf(HubError);
    expect((first.result as HubError).kind).toBe('network');
    expect((first.result as Error).message).toMatch(
      /^the connection to http:\/\/127\.0\.0\.1:\d+ dropped 1 times in a row while fetching model\.safetensors of google\/gemma-3-1b-it \(.*\); 700 kB of 2\.17 MB are kept: run again to resume$/,
    );
    const partial = path.join(repoDir(cacheDir, ONE_B), 'blobs', `${sha256(toy['model.safetensors']!)}.incomplete`);
    const kept = statSync(partial).size;
    expect(kept).toBe(700_000);
    expect(() => Checkpoint.open({ cacheDir, modelId: ONE_B })).toThrow(
      new RegExp(
        `snapshots/${PINNED_1B} is incomplete \\(an interrupted download\\?\\): missing model\\.safetensors \\(or model\\.safetensors\\.index\\.json\\); npx iwibench download --model google/gemma-3-1b-it completes it`,
      ),
    );
    const before = hub.requests.length;
    const second = await fetchWith({ modelId: ONE_B, env });
    if (second.result instanceof Error) throw second.result;
    expect(second.result.fetched).toEqual(['model.safetensors']);
    expect(second.events.find((e) => e.type === 'file')).toMatchObject({ path: 'model.safetensors', from: kept });
    expect(requestsSince(before).filter((r) => r.path.startsWith('/cdn/') && r.range !== 'bytes=0-0')).toMatchObject([
      { range: `bytes=${kept}-`, status: 206 },
    ]);
    expect(existsSync(partial)).toBe(false);
    expect(Checkpoint.open({ cacheDir, modelId: ONE_B }).revision).toBe(PINNED_1B);
  });
});

describe('a corrupted blob never enters the cache', () => {
  it('is removed and fetched again once, and the retry says so', async () => {
    const { cacheDir, env } = setup();
    hub.faults.push({ file: 'model.safetensors', kind: 'corrupt', times: 1 });
    const { result, events } = await fetchWith({ modelId: ONE_B, env });
    if (result instanceof Error) throw result;
    expect(events.find((e) => e.type === 'checksum')).toEqual({
      type: 'checksum',
      path: 'model.safetensors',
      got: expect.stringMatching(/^[0-9a-f]{64}$/),
      expected: sha256(toy['model.safetensors']!),
    });
    expect(Checkpoint.open({ cacheDir, modelId: ONE_B }).revision).toBe(PINNED_1B);
  });

  it('twice: one line saying what to do, nothing of it in the cache', async () => {
    const { cacheDir, env } = setup();
    hub.faults.push({ file: 'model.safetensors', kind: 'corrupt', times: 2 });
    const { result } = await fetchWith({ modelId: ONE_B, env });
    expect(result).toBeInstanceOf(HubError);
    expect((result as HubError).kind).toBe('checksum');
    expect((result as Error).message).toBe(
      `model.safetensors of ${ONE_B} failed its SHA-256 check twice (got ${(result as Error).message.match(/got ([0-9a-f]{64})/)![1]}, the Hub lists ${sha256(toy['model.safetensors']!)}) and was removed: something between this machine and ${hub.url} alters it (a proxy, a mirror in HF_ENDPOINT); fix that, then run again`,
    );
    const blobs = tree(path.join(repoDir(cacheDir, ONE_B), 'blobs'));
    expect(blobs.filter((f) => !f.endsWith('.incomplete'))).toHaveLength(4); // the small files only
    expect(blobs.some((f) => f.endsWith('.incomplete'))).toBe(false);
    expect(existsSync(path.join(repoDir(cacheDir, ONE_B), 'snapshots', PINNED_1B, 'model.safetensors'))).toBe(false);
  });
});

describe('refusals: one line each, saying what to do, leaving nothing', () => {
  const refused = async (
    env: Record<string, string | undefined>,
    options: Partial<Parameters<typeof fetchCheckpoint>[0]> = {},
  ) => {
    const { cacheDir, env: base } = setup(env);
    const { result } = await fetchWith({ modelId: ONE_B, env: base, ...options });
    expect(result).toBeInstanceOf(HubError);
    expect((result as Error).message).not.toContain('\n');
    expect(tree(cacheDir)).toEqual([]);
    return result as HubError;
  };

  it('a gated repository without a token', async () => {
    const error = await refused({ HF_TOKEN: undefined });
    expect(error.kind).toBe('gated');
    expect(error.message).toBe(
      `${ONE_B} is gated: accept its licence at ${hub.url}/${ONE_B} while logged in, make a read token at https://huggingface.co/settings/tokens and set HF_TOKEN to it (or run hf auth login)`,
    );
  });

  it("a token without access, with the page where the licence is accepted and the Hub's words", async () => {
    const error = await refused({ HF_TOKEN: NOT_GRANTED });
    expect(error.kind).toBe('no-access');
    expect(error.message).toBe(
      `the account of the token in HF_TOKEN has no access to ${ONE_B} yet: accept its licence at ${hub.url}/${ONE_B} with that account (access may take a moment to be granted), then run again (the Hub: "Access to model ${ONE_B} is restricted and you are not in the authorized list. Visit ${hub.url.replace('http://', 'http://')}/${ONE_B} to ask for access.")`,
    );
  });

  it('a token the Hub does not know, or one that is not a token', async () => {
    expect((await refused({ HF_TOKEN: 'hf_unknown' })).message).toMatch(
      /^the Hub does not accept the token in HF_TOKEN \(the Hub: "Invalid credentials in Authorization header"\): make a read token/,
    );
    expect((await refused({ HF_TOKEN: 'ghp_notahftoken' })).message).toMatch(
      /^the token in HF_TOKEN is not a Hugging Face token \(they start with hf_\)/,
    );
  });

  it('the token from the file hf auth login writes, when HF_TOKEN is unset', async () => {
    const home = mkdtempSync(path.join(root, 'home-'));
    writeFileSync(path.join(home, 'token'), `${NOT_GRANTED}\n`);
    const error = await refused({ HF_TOKEN: undefined, HF_HOME: home });
    expect(error.message).toContain(`the account of the token in ${path.join(home, 'token')} has no access`);
  });

  it('an unknown revision (a branch name or a commit)', async () => {
    const error = await refused({}, { revision: 'nope', allowUnpinnedRevision: true });
    expect(error.kind).toBe('revision-not-found');
    expect(error.message).toBe(
      `${ONE_B} has no revision "nope" at ${hub.url}: give --revision a commit hash, branch or tag of ${hub.url}/${ONE_B}`,
    );
    expect((await refused({}, { revision: 'd'.repeat(40), allowUnpinnedRevision: true })).kind).toBe(
      'revision-not-found',
    );
  });

  it('another revision of a pinned id, before anything is fetched', async () => {
    const before = hub.requests.length;
    const error = await refused({}, { revision: OTHER });
    expect(error.message).toBe(
      `${ONE_B} is pinned at revision ${PINNED_1B}; ${OTHER} is refused unless --allow-unpinned-revision is given`,
    );
    expect(requestsSince(before)).toEqual([]);
    expect((await refused({}, { revision: 'main' })).kind).toBe('pinned'); // main resolves to OTHER
  });

  it('an unknown repository, and one without weights', async () => {
    expect((await refused({}, { modelId: 'someone/missing' })).message).toBe(
      `${hub.url} has no model "someone/missing": check the id, or give a checkpoint folder with --model-dir`,
    );
    expect((await refused({}, { modelId: 'someone/no-weights' })).kind).toBe('not-a-checkpoint');
  });

  it('no network: the Hub cannot be reached', async () => {
    const closed = await closedPort();
    const error = await refused({ HF_ENDPOINT: `http://127.0.0.1:${closed}` });
    expect(error.kind).toBe('network');
    expect(error.message).toMatch(
      /^cannot reach http:\/\/127\.0\.0\.1:\d+ \(.*ECONNREFUSED.*\): check this machine's network or proxy \(HTTPS_PROXY; HF_ENDPOINT for a mirror\); a checkpoint already complete in the cache needs none$/,
    );
  });

  it('a disk with less free space than the checkpoint, checked before anything is fetched', async () => {
    const error = await refused({}, { modelId: 'someone/huge' });
    expect(error.kind).toBe('disk-full');
    expect(error.message).toMatch(
      /^someone\/huge needs 1000000 TB free for 5 files in .*\/hub, and its disk has [\d.]+ [kMGT]?B: free space there, or set HF_HUB_CACHE \(or --cache-dir\) to a larger disk$/,
    );
  });
});

describe('offline (HF_HUB_OFFLINE=1)', () => {
  it('never touches the network: an empty cache is an error naming the download command', async () => {
    const before = hub.requests.length;
    const { cacheDir, env } = setup({ HF_HUB_OFFLINE: '1' });
    const { result } = await fetchWith({ modelId: ONE_B, env });
    expect((result as HubError).kind).toBe('offline');
    expect((result as Error).message).toBe(
      `HF_HUB_OFFLINE is set, so nothing is fetched, and ${ONE_B} at ${PINNED_1B} is not complete in ${cacheDir}: unset HF_HUB_OFFLINE, or run npx iwibench download --model ${ONE_B} on a machine with the network and copy the cache`,
    );
    expect(requestsSince(before)).toEqual([]);
  });

  it('a complete snapshot is used, also of a branch (through refs/); so is it when the Hub cannot be reached', async () => {
    const { cacheDir, env } = setup();
    await fetchWith({ modelId: 'someone/toy', revision: 'main', env });
    const before = hub.requests.length;
    const offline = await fetchWith({
      modelId: 'someone/toy',
      revision: 'main',
      env: { ...env, HF_HUB_OFFLINE: 'true' },
    });
    expect(offline.result).toMatchObject({ commit: OTHER, fetched: [] });
    expect(requestsSince(before)).toEqual([]);
    const unreachable = await fetchWith({
      modelId: 'someone/toy',
      revision: 'main',
      env: { ...env, HF_ENDPOINT: `http://127.0.0.1:${await closedPort()}` },
    });
    expect(unreachable.result).toMatchObject({
      commit: OTHER,
      dir: path.join(repoDir(cacheDir, 'someone/toy'), 'snapshots', OTHER),
    });
    expect(unreachable.events).toMatchObject([
      { type: 'cached', commit: OTHER, reason: expect.stringMatching(/^cannot reach/) },
    ]);
  });
});

describe('the environment, read as huggingface_hub reads it', () => {
  it('HF_ENDPOINT, HF_TOKEN (else the token file), HF_HUB_OFFLINE, HF_HUB_CACHE and HF_HOME', () => {
    const home = mkdtempSync(path.join(root, 'env-'));
    expect(hubSettings({ HOME: home })).toMatchObject({
      endpoint: 'https://huggingface.co',
      offline: false,
      cacheDir: path.join(os.homedir(), '.cache', 'huggingface', 'hub'),
    });
    expect(hubSettings({ HF_HOME: home }).token).toBeUndefined();
    writeFileSync(path.join(home, 'token'), 'hf_fromfile\n');
    expect(hubSettings({ HF_HOME: home })).toMatchObject({
      token: 'hf_fromfile',
      tokenSource: path.join(home, 'token'),
      cacheDir: path.join(home, 'hub'),
    });
    expect(
      hubSettings({
        HF_HOME: home,
        HF_TOKEN: ' hf_env ',
        HF_ENDPOINT: 'https://mirror.example/',
        HF_HUB_OFFLINE: 'yes',
      }),
    ).toMatchObject({ token: 'hf_env', tokenSource: 'HF_TOKEN', endpoint: 'https://mirror.example', offline: true });
    expect(hubSettings({ HF_HUB_OFFLINE: '0', HF_HUB_CACHE: '/c' })).toMatchObject({ offline: false, cacheDir: '/c' });
    expect(hubSettings({}, '/flag').cacheDir).toBe('/flag');
  });
});
