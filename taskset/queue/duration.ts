// Durations on the command line: `90s`, `30m`, `6h`, `7d`, or a bare number of seconds. A duration that sets a timer
// must fit Node's: a longer one fires after 1 ms (with a warning), so `--attempt-timeout 30d` would fail every attempt
// at once.
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** The longest timer Node keeps (2^31 − 1 ms, 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A duration in ms, more than 0 and at most `maxMs` (default: Node's timer limit; a duration compared with dates, not
 * timed, may pass Infinity).
 */
export function parseDuration(text: string, flag: string, maxMs = MAX_TIMER_MS): number {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(text.trim());
  if (!m) throw new Error(`${flag} must be a duration like 90s, 30m, 6h or 7d, got "${text}"`);
  const ms = Number(m[1]) * UNITS[m[2] || 's']! * 1000;
  if (!(ms >= 1)) throw new Error(`${flag} must be more than 0 (at least 1 ms), got "${text}"`);
  if (ms > maxMs) {
    const limit = maxMs === MAX_TIMER_MS ? "24.8 days, Node's timer limit" : `${maxMs / 1000} s`;
    throw new Error(`${flag} must be at most ${limit}, got "${text}"`);
  }
  return ms;
}
