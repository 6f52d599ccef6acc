// Starts an evaluation process only when the machine has the memory it will need. At the 4B shape the service and
// two evaluation processes do not fit 24 GiB together, and the kernel's OOM killer would take the largest process:
// the service. Each process's need is reserved from its start until it has grown into it (its resident memory) or
// ended, so two workers never both count the same free memory.
import { readFileSync } from 'node:fs';
import os from 'node:os';

type Reservation = { pid: () => number | undefined; bytes: number };
const reservations = new Set<Reservation>();

/** Memory the kernel can give without swapping (MemAvailable), or free memory where /proc is absent. */
export function availableBytes(): number {
  try {
    const match = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (match) return Number(match[1]) * 1024;
  } catch {
    // not Linux
  }
  return os.freemem();
}

function residentBytes(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Reserved memory that started processes have not taken yet. */
function outstandingBytes(): number {
  let total = 0;
  for (const r of reservations) total += Math.max(0, r.bytes - residentBytes(r.pid()));
  return total;
}

const GiB = 2 ** 30;

/**
 * Wait until `bytes` are available beyond what running evaluations still need, then reserve them; the returned
 * function releases the reservation (call it when the process ends). Says once on stderr that it waits, and why.
 */
export async function reserveMemory(bytes: number, pid: () => number | undefined, what: string, pollMs = 2000): Promise<() => void> {
  let told = false;
  for (;;) {
    const free = availableBytes() - outstandingBytes();
    if (free >= bytes) break;
    if (reservations.size === 0) {
      // Nothing of ours to wait for: waiting cannot help, so start and let the user see the figures.
      process.stderr.write(`${what}: needs ~${(bytes / GiB).toFixed(1)} GiB, ${(free / GiB).toFixed(1)} GiB available; starting anyway\n`);
      break;
    }
    if (!told) process.stderr.write(`${what}: waiting for memory (needs ~${(bytes / GiB).toFixed(1)} GiB, ${(free / GiB).toFixed(1)} GiB available)\n`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  const reservation: Reservation = { pid, bytes };
  reservations.add(reservation);
  return () => reservations.delete(reservation);
}
