// The fencing step of a commit: in one Redis script, check that the try still holds its job's lock and claim the
// attempt's commit key for it (SET NX), recording the result it commits. Only the claimant renames its folder into
// place; a try that finds the claim taken completes its job with the claimant's result and discards its folder, and
// one that has lost the lock discards its folder. So each attempt has one result, whatever the network does.
import type { Redis } from 'ioredis';

const CLAIM = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'lost'} end
local held = redis.call('GET', KEYS[2])
if held then return {'taken', held} end
redis.call('SET', KEYS[2], ARGV[2])
return {'claimed'}
`;

export type CommitClaim<T> = { token: string; host: string; pid: number; result: T };
export type ClaimOutcome<T> = { kind: 'claimed' } | { kind: 'taken'; claim: CommitClaim<T> } | { kind: 'lost' };

/** `keys.lock`: the job's BullMQ lock; `keys.commit`: the attempt's commit claim (removed with the job by clean). */
export async function claimCommit<T>(
  client: Redis,
  keys: { lock: string; commit: string },
  claim: CommitClaim<T>,
): Promise<ClaimOutcome<T>> {
  const reply = (await client.eval(CLAIM, 2, keys.lock, keys.commit, claim.token, JSON.stringify(claim))) as string[];
  if (reply[0] === 'lost') return { kind: 'lost' };
  if (reply[0] === 'claimed') return { kind: 'claimed' };
  const held = JSON.parse(reply[1]!) as CommitClaim<T>;
  // Our own claim, seen again after a retried call: still ours.
  return held.token === claim.token ? { kind: 'claimed' } : { kind: 'taken', claim: held };
}

/** Give a claim back (its rename failed), so that a later try may commit. */
export async function releaseClaim(client: Redis, commitKey: string, token: string): Promise<void> {
  const held = await client.get(commitKey);
  if (held && (JSON.parse(held) as CommitClaim<unknown>).token === token) await client.del(commitKey);
}
