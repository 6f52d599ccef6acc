// Where the Hugging Face Hub is and who we are to it, read from the environment as huggingface_hub reads it
// (huggingface_hub/constants.py and utils/_auth.py): HF_ENDPOINT, HF_TOKEN (else the token file `hf auth login`
// writes), HF_HUB_OFFLINE, the cache (HF_HUB_CACHE, HF_HOME) and the two timeouts.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultCacheDir } from '../checkpoint.ts';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

export type HubSettings = {
  /** The Hub's base URL, without a trailing slash. */
  endpoint: string;
  token?: string;
  /** Where the token came from (a variable's name or the token file), for messages; never the token itself. */
  tokenSource?: string;
  /** HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE): nothing touches the network. */
  offline: boolean;
  cacheDir: string;
  /** How long a metadata request may wait for the Hub's answer (HF_HUB_ETAG_TIMEOUT, 10 s). */
  metadataTimeoutMs: number;
  /** How long a download may go without a byte before it is retried (HF_HUB_DOWNLOAD_TIMEOUT, 10 s). */
  stallTimeoutMs: number;
};

/** huggingface_hub's `_is_true`: 1, ON, YES or TRUE, in any case. */
export function isTrue(value: string | undefined): boolean {
  return value !== undefined && ['1', 'ON', 'YES', 'TRUE'].includes(value.trim().toUpperCase());
}

/** $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. */
function hfHome(env: NodeJS.ProcessEnv): string {
  return env.HF_HOME || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'huggingface');
}

function seconds(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value.trim() !== '' && Number.isFinite(n) && n > 0 ? n * 1000 : fallback * 1000;
}

/** The token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN (the older name), else the token file ($HF_TOKEN_PATH). */
function token(env: NodeJS.ProcessEnv): { token?: string; tokenSource?: string } {
  for (const name of ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN']) {
    const value = env[name]?.trim();
    if (value) return { token: value, tokenSource: name };
  }
  const file = env.HF_TOKEN_PATH || path.join(hfHome(env), 'token');
  try {
    const value = readFileSync(file, 'utf8').trim();
    return value ? { token: value, tokenSource: file } : {};
  } catch {
    return {}; // no file: no token, as huggingface_hub
  }
}

/** The settings of this environment; `cacheDir` (--cache-dir) overrides the environment's cache. */
export function hubSettings(env: NodeJS.ProcessEnv = process.env, cacheDir?: string): HubSettings {
  return {
    endpoint: (env.HF_ENDPOINT || DEFAULT_ENDPOINT).replace(/\/+$/, ''),
    ...token(env),
    offline: isTrue(env.HF_HUB_OFFLINE || env.TRANSFORMERS_OFFLINE),
    cacheDir: cacheDir ?? defaultCacheDir(env),
    metadataTimeoutMs: seconds(env.HF_HUB_ETAG_TIMEOUT, 10),
    stallTimeoutMs: seconds(env.HF_HUB_DOWNLOAD_TIMEOUT, 10),
  };
}
