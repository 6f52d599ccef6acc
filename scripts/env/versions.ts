// What a bug report names first: this checkout (version, commit), Node, the OS, and every dependency as installed.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PACKAGE_VERSION } from '../../core/version.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The checkout's commit, read from .git without running git (an installed copy has none). */
function commit(): string | null {
  const git = path.join(ROOT, '.git');
  const head = read(path.join(git, 'HEAD'))?.trim();
  if (!head) return null;
  const ref = /^ref: (.+)$/.exec(head)?.[1];
  if (!ref) return head;
  const loose = read(path.join(git, ref))?.trim();
  if (loose) return loose;
  const packed = read(path.join(git, 'packed-refs'))
    ?.split('\n')
    .find((line) => line.endsWith(` ${ref}`));
  return packed?.split(' ')[0] ?? null;
}

export function versions() {
  const manifest = JSON.parse(read(path.join(ROOT, 'package.json'))!) as {
    dependencies: Record<string, string>;
  };
  const installed = (name: string) => {
    const file = path.join(ROOT, 'node_modules', name, 'package.json');
    return existsSync(file) ? ((JSON.parse(read(file)!) as { version: string }).version ?? null) : null;
  };
  const release = read('/etc/os-release');
  const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
    ?.glibcVersionRuntime;
  return {
    iwibench: { version: PACKAGE_VERSION, commit: commit(), root: ROOT },
    node: { version: process.version, v8: process.versions.v8, glibc: glibc ?? null },
    os: {
      name: release ? (/^PRETTY_NAME="?([^"\n]*)"?$/m.exec(release)?.[1] ?? null) : null,
      kernel: `${os.type()} ${os.release()}`,
      platform: `${process.platform}-${process.arch}`,
    },
    // Every dependency of package.json as installed (null: not installed: npm ci).
    dependencies: Object.fromEntries(Object.keys(manifest.dependencies).map((name) => [name, installed(name)])),
  };
}
