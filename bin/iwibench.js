#!/usr/bin/env -S node --single-threaded-gc
// Entry point of `npx iwibench`: registers the TypeScript loader, then runs scripts/cli.ts. The first line gives node
// the engine's process flags (engine/settings.ts, ENGINE_PROCESS_FLAGS; a test keeps the two the same): `npx` runs
// this file through it.
import { register } from 'tsx/esm/api';

// `npm exec` (npx) does not pass signals on: `kill` of the npx process ends npm and leaves this one running. Under
// npm exec, the parent's end is taken as a SIGTERM, so a command stops as it would on `kill` (the service closes).
if (process.env.npm_command === 'exec') {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(watch);
      process.kill(process.pid, 'SIGTERM');
    }
  }, 500);
  watch.unref();
}

register();
const { run } = await import('../scripts/cli.ts');
await run(process.argv.slice(2));
