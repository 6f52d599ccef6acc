#!/usr/bin/env node
// Entry point of `npx iwibench`: registers the TypeScript loader, then runs scripts/cli.ts.
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../scripts/cli.ts');
await run(process.argv.slice(2));
