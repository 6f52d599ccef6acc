// The paired test of `compare`: McNemar's exact test. Each question answered by both runs is a pair of right/wrong
// outcomes; only the discordant pairs carry information: b (right in A only) and c (right in B only). Under "no
// difference" each discordant pair is a fair coin, so b ~ Binomial(b + c, 1/2). Two-sided exact p-value:
// min(1, 2 · P(X ≤ min(b, c))). (McNemar 1947; the exact form avoids the chi-square approximation at small b + c.)

/** Two-sided exact McNemar p-value for b and c discordant pairs; 1 when there are none. */
export function mcnemarExact(b: number, c: number): number {
  if (!Number.isInteger(b) || !Number.isInteger(c) || b < 0 || c < 0)
    throw new Error(`mcnemarExact: counts must be non-negative integers, got ${b}, ${c}`);
  const n = b + c;
  if (n === 0) return 1;
  return Math.min(1, 2 * binomialLowerTail(Math.min(b, c), n));
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2), summed in log space so that n in the thousands neither overflows nor underflows. */
export function binomialLowerTail(k: number, n: number): number {
  const logHalfPowN = -n * Math.LN2;
  let logChoose = 0; // log C(n, 0)
  let logSum = logHalfPowN; // the k = 0 term
  for (let i = 1; i <= k; i++) {
    logChoose += Math.log(n - i + 1) - Math.log(i);
    const term = logChoose + logHalfPowN;
    const high = Math.max(logSum, term);
    logSum = high + Math.log(Math.exp(logSum - high) + Math.exp(term - high));
  }
  return Math.min(1, Math.exp(logSum));
}
