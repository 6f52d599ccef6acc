// How a command shows a checkpoint's fetch (engine/hub/, its FetchEvents) on stderr: on a terminal a cli-progress bar
// of the bytes with the rate and the time left; otherwise a line every few seconds, so that a long fetch is never
// silent in a log. Either way one line for each thing a user should know: a file resumed, a connection retried, a
// blob that failed its checksum, a wait for another process fetching the same blob, the cache used for want of a Hub.
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { bytesText, type FetchEvent } from '../engine/index.ts';

const LINE_EVERY_MS = 5000;
const VERIFY_LINE_BYTES = 100e6; // off a terminal, the checksum of a large file is said (it takes seconds)

/** `42 s`, `3 min 20 s`, `1 h 02 min`. */
export function durationText(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** What a notable event says, in one line (undefined: only the bar or the periodic line shows it). */
export function describeFetchEvent(event: FetchEvent): string | undefined {
  switch (event.type) {
    case 'plan':
      return event.files === 0
        ? undefined
        : `fetching ${event.files} file${event.files === 1 ? '' : 's'}, ${bytesText(event.bytes)}, at ${event.commit}${event.present > 0 ? ` (${event.present} already in the cache)` : ''}`;
    case 'file':
      return event.from > 0
        ? `${event.path}: resuming at ${bytesText(event.from)} of ${bytesText(event.size)}`
        : undefined;
    case 'retry':
      return `${event.path}: ${event.reason}; resuming at ${bytesText(event.from)}`;
    case 'checksum':
      return `${event.path}: its checksum is ${event.got}, the Hub lists ${event.expected}: removed, fetching it again`;
    case 'wait':
      return `${event.path}: another process on this machine is fetching it; waiting for it`;
    case 'cached':
      return `${event.reason}; using the cache's snapshot ${event.commit}`;
    default:
      return undefined;
  }
}

/** `stop(true)` after a fetch that completed says how much it fetched and how long it took. */
export type FetchDisplay = { onEvent: (event: FetchEvent) => void; stop: (completed: boolean) => void };

/** Shows one fetch under `label` on stderr until `stop`. */
export function showFetchProgress(label: string, stream: NodeJS.WriteStream = process.stderr): FetchDisplay {
  let total = 0;
  let done = 0;
  let file = '';
  let fileSize = 0;
  let started = Date.now();
  let lastLine = 0;
  const rate = () => done / Math.max((Date.now() - started) / 1000, 1e-3);
  const status = () => {
    const left = rate() > 0 ? durationText((total - done) / rate()) : '?';
    return `${bytesText(done)} of ${bytesText(total)}, ${bytesText(rate())}/s, ${left} left`;
  };
  const tty = stream.isTTY === true;
  let multi: MultiBar | undefined;
  let bar: SingleBar | undefined;
  const say = (line: string) => (multi ? multi.log(`${label}: ${line}\n`) : stream.write(`${label}: ${line}\n`));
  return {
    onEvent(event) {
      const line = describeFetchEvent(event);
      if (event.type === 'plan') {
        [total, done, started, lastLine] = [event.bytes, 0, Date.now(), Date.now()];
        if (tty && event.bytes > 0) {
          multi = new MultiBar(
            { format: `${label} |{bar}| {percentage}% {status}  {file}`, hideCursor: true, stream },
            Presets.shades_classic,
          );
          bar = multi.create(total, 0, { status: status(), file });
        }
      }
      if (line) say(line);
      if (event.type === 'file') [file, fileSize] = [event.path, event.size];
      if (event.type === 'checksum') bar?.setTotal((total += fileSize)); // fetched again from nothing
      if (event.type === 'verify' && !tty && fileSize >= VERIFY_LINE_BYTES) say(`${event.path}: checking its checksum`);
      if (event.type !== 'bytes') return;
      done += event.bytes;
      if (bar) return bar.update(done, { status: status(), file });
      const now = Date.now();
      if (now - lastLine >= LINE_EVERY_MS && done < total) {
        lastLine = now;
        say(`${status()} (${file})`);
      }
    },
    stop(completed) {
      multi?.stop();
      if (completed && done > 0)
        stream.write(`${label}: fetched ${bytesText(done)} in ${durationText((Date.now() - started) / 1000)}\n`);
    },
  };
}
