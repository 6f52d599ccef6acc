// A fetch's errors as a user acts on them: one line each, saying what happened and what to do. The Hub says why it
// refuses in the headers X-Error-Code and X-Error-Message (as huggingface_hub's hf_raise_for_status reads them);
// @huggingface/hub's HubApiError keeps the status but drops the headers, so hub-fetch.ts keeps them per URL.

export type HubErrorKind =
  | 'gated' // a gated repository, no token
  | 'no-access' // a token whose account has not been granted the repository
  | 'bad-token' // a token the Hub does not know
  | 'repo-not-found'
  | 'revision-not-found'
  | 'file-not-found'
  | 'pinned' // another revision of a pinned id, not allowed
  | 'not-a-checkpoint' // a repository without safetensors weights
  | 'network' // the Hub cannot be reached, or a download kept dropping
  | 'hub' // any other refusal or failure of the Hub
  | 'disk-full'
  | 'checksum'
  | 'offline'; // HF_HUB_OFFLINE set and the checkpoint not complete in the cache

export class HubError extends Error {
  override name = 'HubError';

  constructor(
    readonly kind: HubErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** A refusal of the Hub: its status and its own words. */
export type Refusal = { status: number; code?: string; message?: string; url: string };

/** What the messages name: the repository, the revision asked for, where the Hub is and where the token came from. */
export type ErrorContext = { modelId: string; revision: string; endpoint: string; tokenSource?: string };

const TOKENS_PAGE = 'https://huggingface.co/settings/tokens';

/** The error of a refusal (a status ≥ 400 with the Hub's headers). */
export function refusalError(refusal: Refusal, context: ErrorContext): HubError {
  const { modelId, revision, endpoint, tokenSource } = context;
  const page = `${endpoint}/${modelId}`;
  const said = refusal.message ? ` (the Hub: "${refusal.message}")` : '';
  if (refusal.status === 401 && !tokenSource && refusal.code === 'GatedRepo')
    return new HubError(
      'gated',
      `${modelId} is gated: accept its licence at ${page} while logged in, make a read token at ${TOKENS_PAGE} and set HF_TOKEN to it (or run hf auth login)`,
    );
  if (refusal.status === 401 && tokenSource && refusal.code !== 'RepoNotFound')
    return new HubError(
      'bad-token',
      `the Hub does not accept the token in ${tokenSource}${said}: make a read token at ${TOKENS_PAGE} and set HF_TOKEN to it`,
    );
  if (refusal.code === 'GatedRepo' || (refusal.status === 403 && tokenSource))
    return new HubError(
      'no-access',
      `the account of the token in ${tokenSource ?? 'HF_TOKEN'} has no access to ${modelId} yet: accept its licence at ${page} with that account (access may take a moment to be granted), then run again${said}`,
    );
  if (refusal.code === 'RevisionNotFound')
    return new HubError(
      'revision-not-found',
      `${modelId} has no revision "${revision}" at ${endpoint}: give --revision a commit hash, branch or tag of ${page}`,
    );
  if (refusal.code === 'EntryNotFound')
    return new HubError('file-not-found', `${refusal.url} is not on the Hub any more${said}: run again`);
  if (refusal.code === 'RepoNotFound' || refusal.status === 401 || refusal.status === 404)
    return new HubError(
      'repo-not-found',
      `${endpoint} has no model "${modelId}"${tokenSource ? '' : ' (or it is private and HF_TOKEN is not set)'}: check the id, or give a checkpoint folder with --model-dir`,
    );
  return new HubError(
    'hub',
    `the Hub answered ${refusal.status} to ${refusal.url}${said}: ${refusal.status >= 500 || refusal.status === 429 ? 'try again later' : 'see https://status.huggingface.co'}`,
  );
}

/** Whether an error of fetch is the network's (no answer, a dropped connection, a stall), not an HTTP status. */
export function isNetworkError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'AbortError' || error.name === 'TimeoutError' || error instanceof StallError) return true;
  const code = (error as NodeJS.ErrnoException).code ?? (error.cause as NodeJS.ErrnoException | undefined)?.code ?? '';
  return (
    (error instanceof TypeError && (error.message === 'fetch failed' || error.message === 'terminated')) ||
    /^(E(CONNREFUSED|CONNRESET|NOTFOUND|AI_AGAIN|TIMEDOUT|PIPE|HOSTUNREACH|NETUNREACH)|UND_ERR_)/.test(code)
  );
}

/** A download that went `ms` without a byte. */
export class StallError extends Error {
  override name = 'StallError';
  constructor(ms: number) {
    super(`no data for ${ms / 1000} s`);
  }
}

/** The cause of a network error in a few words: `ECONNREFUSED`, `getaddrinfo ENOTFOUND huggingface.co`. */
export function networkCause(error: unknown): string {
  const cause = (error as Error).cause as Error | undefined;
  if (cause instanceof Error) {
    // undici's SocketError says "other side closed"; its errors nest once more at most.
    const inner = cause.cause instanceof Error ? cause.cause : cause;
    return inner.message || (inner as NodeJS.ErrnoException).code || cause.message;
  }
  return (error as Error).message;
}

/** The error of a Hub that cannot be reached at all. */
export function unreachableError(error: unknown, endpoint: string): HubError {
  return new HubError(
    'network',
    `cannot reach ${endpoint} (${networkCause(error)}): check this machine's network or proxy (HTTPS_PROXY; HF_ENDPOINT for a mirror); a checkpoint already complete in the cache needs none`,
  );
}
