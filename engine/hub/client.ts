// The Hub's protocol, spoken by @huggingface/hub: a revision resolved to its commit (modelInfo), a commit's files
// with their sizes and LFS oids (listFiles, paged), and where a file's bytes are (fileDownloadInfo: the resolve URL
// and the CDN it redirects to). Added here: the token, endpoint and timeout of this environment on every request, a
// few tries on a 5xx, 429 or dropped connection, and each refusal's X-Error-Code and X-Error-Message, which
// HubApiError drops, kept so that errors.ts can say what to do. The library is loaded on first use: the processes
// that only open a checkpoint never need it.
import { PACKAGE_VERSION } from '../../core/version.ts';
import { HubError, isNetworkError, refusalError, unreachableError, type ErrorContext, type Refusal } from './errors.ts';
import type { HubSettings } from './settings.ts';
import type { Digest, Source } from './transfer.ts';
import { TransferRefused } from './transfer.ts';
import { setTimeout as sleep } from 'node:timers/promises';

/** A file of a commit as the Hub lists it. */
export type RepoFile = {
  path: string;
  size: number;
  /** The blob's name in the cache: the LFS oid (SHA-256) of an LFS file, else its git oid, as huggingface_hub names it. */
  etag: string;
  digest: Digest;
};

export type HubClient = {
  /** The commit a revision (commit, branch or tag) is at. */
  resolve(revision: string): Promise<string>;
  /** The top-level files of a commit. */
  list(commit: string): Promise<RepoFile[]>;
  /** Where a file of a commit is fetched from. */
  source(file: string, commit: string): Source;
  /** An error as the user acts on it (a HubError), where it is the Hub's or the network's; others as they are. */
  explain(error: unknown): unknown;
};

const USER_AGENT = `iwibench/${PACKAGE_VERSION}; hf_hub_js`;
const METADATA_TRIES = 3;

export async function hubClient(
  settings: HubSettings,
  context: ErrorContext,
  retryDelayMs: number,
): Promise<HubClient> {
  const hub = await import('@huggingface/hub');
  const refusals = new Map<string, Refusal>();
  const headers = (init?: HeadersInit) => {
    const all = new Headers(init);
    all.set('user-agent', USER_AGENT);
    return all;
  };
  // Every request of the library: this environment's timeout on the answer (not on the body), refusals kept.
  const hubFetch: typeof fetch = async (input, init) => {
    const controller = new AbortController();
    const ms = settings.metadataTimeoutMs;
    const timer = setTimeout(
      () => controller.abort(new DOMException(`no answer within ${ms / 1000} s`, 'TimeoutError')),
      ms,
    );
    let response: Response;
    try {
      response = await fetch(input, { ...init, headers: headers(init?.headers), signal: controller.signal });
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) {
      const code = response.headers.get('x-error-code') ?? undefined;
      const message = response.headers.get('x-error-message') ?? undefined;
      refusals.set(response.url, { status: response.status, code, message, url: response.url });
    }
    return response;
  };
  const params = { hubUrl: settings.endpoint, fetch: hubFetch, ...(settings.token && { accessToken: settings.token }) };
  const repo = { type: 'model' as const, name: context.modelId };

  const explain = (error: unknown): unknown => {
    if (error instanceof HubError) return error;
    if (error instanceof hub.HubApiError)
      return refusalError(refusals.get(error.url) ?? { status: error.statusCode, url: error.url }, context);
    if (error instanceof TransferRefused)
      return refusalError(
        { status: error.status, code: error.code, message: error.hubMessage, url: error.url },
        context,
      );
    if (error instanceof TypeError && /access token must start with 'hf_'/.test(error.message))
      return new HubError(
        'bad-token',
        `the token in ${settings.tokenSource} is not a Hugging Face token (they start with hf_): set HF_TOKEN to a read token from https://huggingface.co/settings/tokens`,
      );
    if (isNetworkError(error)) return unreachableError(error, settings.endpoint);
    return error;
  };
  const transient = (error: unknown) =>
    isNetworkError(error) ||
    (error instanceof hub.HubApiError && (error.statusCode >= 500 || error.statusCode === 429));
  // A metadata request, tried again on a transient failure; explained when it fails for good.
  const request = async <T>(call: () => Promise<T>): Promise<T> => {
    for (let tries = 1; ; tries++) {
      try {
        return await call();
      } catch (error) {
        if (tries >= METADATA_TRIES || !transient(error)) throw explain(error);
        await sleep(retryDelayMs * 2 ** (tries - 1));
      }
    }
  };

  return {
    async resolve(revision) {
      const info = await request(() =>
        hub.modelInfo({ ...params, name: context.modelId, revision, additionalFields: ['sha'] }),
      );
      if (typeof info.sha !== 'string' || !/^[0-9a-f]{40}$/.test(info.sha))
        throw new HubError('hub', `${settings.endpoint} gave no commit for ${context.modelId}@${revision}`);
      return info.sha;
    },
    async list(commit) {
      const entries = await request(async () => {
        const all = [];
        for await (const entry of hub.listFiles({ ...params, repo, revision: commit })) all.push(entry);
        return all;
      });
      return entries
        .filter((entry) => entry.type === 'file')
        .map((entry): RepoFile => {
          if (entry.lfs)
            return { path: entry.path, size: entry.size, etag: entry.lfs.oid, digest: sha256(entry.lfs.oid) };
          if (!entry.oid) throw new HubError('hub', `${settings.endpoint} lists ${entry.path} without an oid`);
          return {
            path: entry.path,
            size: entry.size,
            etag: entry.oid,
            digest: { algorithm: 'git-sha1', hex: entry.oid },
          };
        });
    },
    source(file, commit) {
      return async () => {
        const info = await request(() => hub.fileDownloadInfo({ ...params, repo, path: file, revision: commit }));
        if (!info)
          throw refusalError({ status: 404, code: 'EntryNotFound', url: `${context.modelId}/${file}` }, context);
        const auth: Record<string, string> = settings.token ? { Authorization: `Bearer ${settings.token}` } : {};
        return { url: info.url, headers: { ...auth, 'user-agent': USER_AGENT } };
      };
    },
    explain,
  };
}

function sha256(hex: string): Digest {
  return { algorithm: 'sha256', hex };
}
