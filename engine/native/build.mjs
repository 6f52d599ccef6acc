// `npm ci` runs this (the root package's `install` script): builds the BF16 kernel addon with node-gyp into
// native/build/. If that fails (no compiler, another OS), it prints one line and exits 0, so the install succeeds
// and engine/kernels.ts uses its JavaScript fallback.
//
// An addon built from these sources for this Node (its stamp, build-stamp.mjs) is kept: the first `npx iwibench` in
// a clone installs the project into npm's npx cache as a link, and npm runs this script again there. Rebuilding then
// took half a minute and replaced the addon under every process that had it loaded. `npm rebuild` or `--force`
// rebuilds whatever the stamp says (a new compiler, say).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { STAMP_FILE, sourcesDigest } from './build-stamp.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const log = path.join(here, 'build.log');
const addon = path.join(here, 'build/Release/iwibench_kernels.node');
const stamp = path.join(here, STAMP_FILE);
const digest = sourcesDigest(here);

const forced = process.argv.includes('--force') || process.env.npm_command === 'rebuild';
if (!forced && existsSync(addon) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) {
  console.error(`iwibench: native BF16 kernel up to date (${path.relative(process.cwd(), addon)})`);
  process.exit(0);
}
rmSync(stamp, { force: true });

function fallback(reason) {
  console.error(`iwibench: native BF16 kernel not built (${reason}); using the JavaScript fallback`);
  process.exit(0);
}

// npm gives lifecycle scripts its bundled node-gyp (npm_config_node_gyp); run by hand, this uses the one bundled with
// the npm next to this node. Node's headers come from nodedir (npm config, or next to this node), so nothing is downloaded.
const bundled = path.join(
  path.dirname(process.execPath),
  '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
);
const nodeGyp = process.env.npm_config_node_gyp || (existsSync(bundled) ? bundled : undefined);
const command = nodeGyp ? [process.execPath, nodeGyp] : ['node-gyp'];
const args = ['rebuild', '--directory', here];
const nodedir = process.env.npm_config_nodedir || path.dirname(path.dirname(process.execPath));
if (existsSync(path.join(nodedir, 'include/node/node_api.h'))) args.push(`--nodedir=${nodedir}`);

const result = spawnSync(command[0], [...command.slice(1), ...args], { encoding: 'utf8' });
writeFileSync(
  log,
  `${command.join(' ')} ${args.join(' ')}\n${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? `${result.error}\n` : ''}`,
);
if (result.error) fallback(`${command.at(-1)} could not run: ${result.error.message}`);
if (result.status !== 0) {
  const firstError = `${result.stderr}`
    .split('\n')
    .find((line) => /error|not found/i.test(line) && !line.startsWith('gyp info'));
  fallback(
    `node-gyp exited with ${result.status}${firstError ? `: ${firstError.trim().slice(0, 120)}` : ''}; see native/build.log`,
  );
}
try {
  createRequire(import.meta.url)(addon);
} catch (error) {
  fallback(`the built addon does not load: ${error.message.split('\n')[0]}`);
}
writeFileSync(stamp, digest);
console.error(`iwibench: native BF16 kernel built (${path.relative(process.cwd(), addon)})`);
