// Preloaded (--import, after tsx) into a process a test starts: appends the URL of every module the process loads
// to the file named by $IWIBENCH_RECORD_LOADS, one a line. Written synchronously, so the file holds a module's whole
// graph once the import that loaded it has resolved, or the process has exited.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) register(import.meta.url); // this file's `load`, in the loader's thread

export async function load(url, context, next) {
  appendFileSync(process.env.IWIBENCH_RECORD_LOADS, `${url}\n`);
  return next(url, context);
}
