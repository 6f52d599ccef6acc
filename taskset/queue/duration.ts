// Durations on the command line: `90s`, `30m`, `6h`, `7d`, or a bare number of seconds.
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)([smhd]?)$/.exec(text.trim());
  if (!m) throw new Error(`${flag} must be a duration like 90s, 30m, 6h or 7d, got "${text}"`);
  return Number(m[1]) * UNITS[m[2] || 's']! * 1000;
}
