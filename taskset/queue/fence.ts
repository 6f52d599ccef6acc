// The fencing step of a commit: in one Redis script, check that the try still holds its job's lock and claim the
// attempt's commit key for it (SET NX), recording the result it commits; after its rename the try confirms the claim
// (`committed`). A claim confirmed stands: a later try completes its job with that result. A claim never confirmed,
// whose try no longer holds the lock (the caller does), is the claim of a try that died or was cut off between its
// claim and its rename: the caller fences that try's folder and takes the claim over (worker.ts, commit), so an
// attempt never ends with a claim and no folder. The value is JSON written here and compared byte for byte by the
// scripts (Lua never re-encodes it, which would round the result's numbers).
import type { Redis } from 'ioredis';

const CLAIM = `-- iwibench: claim an attempt's commit
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'lost'} end
local held = redis.call('GET', KEYS[2])
if held then return {'held', held} end
redis.call('SET', KEYS[2], ARGV[2])
return {'claimed'}
`;

// Replace the claim `expected` by `next` (or delete it: next ''), only while the caller holds the lock when a token is
// given.
const SWAP = `-- iwibench: swap an attempt's commit claim
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then return 'lost' end
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 'changed' end
if ARGV[3] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[3]) end
return 'ok'
`;

/** A claim: the try (its lock token, host and pid), the result it commits, and whether its folder is in place. */
export type CommitClaim<T> = { token: string; host: string; pid: number; result: T; committed?: boolean };
export type ClaimOutcome<T> =
  | { kind: 'claimed' }
  /** Another try's claim, confirmed (or of before confirmations): its result is the attempt's. */
  | { kind: 'taken'; claim: CommitClaim<T> }
  /** Another try's claim, never confirmed, and that try holds no lock (the caller holds it). */
  | { kind: 'unconfirmed'; claim: CommitClaim<T>; raw: string }
  | { kind: 'lost' };

export type CommitKeys = { lock: string; commit: string };

/** The claim as stored: pending until confirmed. */
export const claimText = <T>(claim: CommitClaim<T>, committed = false) => JSON.stringify({ ...claim, committed });

/** `keys.lock`: the job's BullMQ lock; `keys.commit`: the attempt's commit claim (removed with the job by clean). */
export async function claimCommit<T>(client: Redis, keys: CommitKeys, claim: CommitClaim<T>): Promise<ClaimOutcome<T>> {
  const reply = (await client.eval(CLAIM, 2, keys.lock, keys.commit, claim.token, claimText(claim))) as string[];
  if (reply[0] === 'lost') return { kind: 'lost' };
  if (reply[0] === 'claimed') return { kind: 'claimed' };
  const raw = reply[1]!;
  const held = JSON.parse(raw) as CommitClaim<T>;
  // Our own claim, seen again after a retried call (a reply lost, the call sent again): still ours.
  if (held.token === claim.token) return { kind: 'claimed' };
  return held.committed === false ? { kind: 'unconfirmed', claim: held, raw } : { kind: 'taken', claim: held };
}

async function swap(client: Redis, keys: CommitKeys, lockToken: string, expected: string, next: string) {
  return (await client.eval(SWAP, 2, keys.lock, keys.commit, lockToken, expected, next)) as 'ok' | 'changed' | 'lost';
}

/** Take over another try's unconfirmed claim (`raw`, as read), while still holding the lock. */
export function takeOverClaim<T>(client: Redis, keys: CommitKeys, raw: string, claim: CommitClaim<T>) {
  return swap(client, keys, claim.token, raw, claimText(claim));
}

/**
 * Confirm a claim once its folder is in place (no lock needed: the rename has happened). 'changed': another try took
 * the claim over meanwhile, so this folder is not the attempt's.
 */
export function confirmClaim<T>(client: Redis, keys: CommitKeys, claim: CommitClaim<T>) {
  return swap(client, keys, '', claimText(claim), claimText(claim, true));
}

/** Give a claim back while it is still this try's and unconfirmed (its rename failed, or its lock was lost). */
export function releaseClaim<T>(client: Redis, keys: CommitKeys, claim: CommitClaim<T>) {
  return swap(client, keys, '', claimText(claim), '');
}
