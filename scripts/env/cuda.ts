// onnxruntime's execution providers, and what its CUDA provider needs on this machine: the provider's own libraries
// beside onnxruntime-node's binding (fetched by its install script, which package.json keeps from running), CUDA 12's
// and cuDNN 9's libraries where the dynamic loader finds them (ldconfig's cache, LD_LIBRARY_PATH), the driver and the
// GPUs. A library found only in a CUDA folder the loader does not search is named as such: the fix is LD_LIBRARY_PATH.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** The provider's libraries, beside the binding. */
export const PROVIDER_FILES = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'] as const;
/** What onnxruntime's CUDA 12 provider links against (CUDA runtime, cuBLAS, cuFFT, cuRAND, cuDNN 9). */
export const CUDA_LIBRARIES = [
  'libcudart.so.12',
  'libcublas.so.12',
  'libcublasLt.so.12',
  'libcufft.so.11',
  'libcurand.so.10',
  'libcudnn.so.9',
] as const;

const require = createRequire(import.meta.url);

/** The folder of onnxruntime-node's binding for this platform (bin/napi-vN/linux/x64/). */
export function bindingDir(): string | null {
  const bin = path.join(path.dirname(require.resolve('onnxruntime-node/package.json')), 'bin');
  if (!existsSync(bin)) return null;
  for (const napi of readdirSync(bin).sort().reverse()) {
    const dir = path.join(bin, napi, process.platform, process.arch);
    if (existsSync(path.join(dir, 'onnxruntime_binding.node'))) return dir;
  }
  return null;
}

/** name → path of every library in the dynamic loader's cache (`ldconfig -p`), where there is one. */
function loaderCache(): Map<string, string> {
  const found = new Map<string, string>();
  for (const ldconfig of ['/sbin/ldconfig', '/usr/sbin/ldconfig', 'ldconfig']) {
    try {
      const text = execFileSync(ldconfig, ['-p'], {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      for (const match of text.matchAll(/^\s+(\S+) \(([^)]*)\) => (\S+)$/gm))
        if (!found.has(match[1]!) && !match[2]!.includes('i386')) found.set(match[1]!, match[3]!);
      return found;
    } catch {
      // the next name, else no cache (not Linux, or no ldconfig)
    }
  }
  return found;
}

/** Where a library is: on the loader's path, only in a CUDA folder the loader does not search, or nowhere (null). */
export type LibraryPlace = { found: string | null; not_on_loader_path?: true };

/** Where each library is. */
function findLibraries(names: readonly string[], env: NodeJS.ProcessEnv): Record<string, LibraryPlace> {
  const cache = loaderCache();
  const searched = (env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  const cudaHomes = [env.CUDA_HOME, env.CUDA_PATH, '/usr/local/cuda'].filter((d): d is string => Boolean(d));
  const aside = cudaHomes.flatMap((home) => [path.join(home, 'lib64'), path.join(home, 'lib')]);
  return Object.fromEntries(
    names.map((name) => {
      const onPath = searched.map((dir) => path.join(dir, name)).find((file) => existsSync(file)) ?? cache.get(name);
      if (onPath) return [name, { found: onPath }];
      const elsewhere = aside.map((dir) => path.join(dir, name)).find((file) => existsSync(file));
      return [name, elsewhere ? { found: elsewhere, not_on_loader_path: true } : { found: null }];
    }),
  );
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The NVIDIA driver's version and the GPUs it sees (from /proc; none: no driver loaded). */
function gpus(): { driver: string | null; gpus: string[] } {
  const version = read('/proc/driver/nvidia/version');
  const dir = '/proc/driver/nvidia/gpus';
  const names = existsSync(dir)
    ? readdirSync(dir).flatMap(
        (bus) => /^Model:\s*(.*)$/m.exec(read(path.join(dir, bus, 'information')) ?? '')?.[1] ?? [],
      )
    : [];
  return {
    driver: version ? (/Kernel Module\s+([\d.]+)/.exec(version)?.[1] ?? version.split('\n')[0]!) : null,
    gpus: names,
  };
}

export async function onnxruntime(env: NodeJS.ProcessEnv = process.env) {
  const ort = await import('onnxruntime-node');
  const dir = bindingDir();
  const provider = Object.fromEntries(
    PROVIDER_FILES.map((file) => [file, dir && existsSync(path.join(dir, file)) ? path.join(dir, file) : null]),
  );
  const libraries = findLibraries(CUDA_LIBRARIES, env);
  const missing = [
    ...Object.entries(provider).flatMap(([file, at]) => (at ? [] : [file])),
    ...Object.entries(libraries).flatMap(([name, at]) => (at.found && !at.not_on_loader_path ? [] : [name])),
  ];
  return {
    version: (require('onnxruntime-node/package.json') as { version: string }).version,
    binding_dir: dir,
    providers: ort.listSupportedBackends().map((b) => `${b.name}${b.bundled ? '' : ' (not bundled)'}`),
    cuda: { ...gpus(), provider, libraries, missing },
  };
}
