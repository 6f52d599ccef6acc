// A worker thread's entry: TypeScript through tsx (as bin/iwibench.js does for the CLI), then the module named.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.module);
