// npx iwibench env [--json] [--queue redis://HOST:PORT/DB …]
// What a bug report needs and what this machine will run, as `transformers env` and vLLM's collect_env print it:
// versions (this checkout, Node, the OS, every dependency), the CPU's instruction sets and the kernels' choice
// (kernelInfo(), every field as it is), the arithmetic's names, onnxruntime's providers and what its CUDA provider
// lacks here, the Hugging Face cache with the pinned checkpoints in it, the memory and disk each pinned target needs
// against what is free, and the queue's Redis when --queue is given. Nothing is fetched; no secret is printed.
import {
  CUDA_INSTALL,
  PINNED_REVISIONS,
  PRECISIONS,
  arithmeticName,
  bytesText,
  hubSettings,
  kernelInfo,
  prepareDevice,
} from '../engine/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { onnxruntime } from './env/cuda.ts';
import { cpu, freeDisk, memory } from './env/machine.ts';
import { cachedTargets, targetNeeds } from './env/targets.ts';
import { versions } from './env/versions.ts';

// The queue commands' flags (scripts/pilot/queue-flags.ts), declared again so that `env --help` loads no taskset.
const QUEUE_DEFAULTS = {
  queue: '',
  'queue-password-env': undefined as string | undefined,
  'queue-tls-ca': undefined as string | undefined,
  'queue-tls-cert': undefined as string | undefined,
  'queue-tls-key': undefined as string | undefined,
  'queue-timeout-seconds': 15,
};

export const command = defineCommand({
  usage: 'env',
  description:
    'What a bug report needs and what this machine will run: versions, CPU and kernels, onnxruntime and CUDA, the Hugging Face cache, memory and disk per target, and the queue.',
  examples: ['npx iwibench env', 'npx iwibench env --json --queue redis://127.0.0.1:6379/0'],
  defaults: { json: false, ...QUEUE_DEFAULTS },
  help: {
    json: 'print the same as one JSON document (for scripts)',
    queue: 'also the Redis of a pilot queue: redis://[USER@]HOST:PORT/DB, or rediss://… for TLS',
    'queue-password-env': "the environment variable holding Redis's password (never on the command line)",
    'queue-tls-ca': "with rediss://: the CA certificate (PEM file) that signed the server's",
    'queue-tls-cert': 'with rediss://: a client certificate (PEM file), for a server that asks for one',
    'queue-tls-key': "with rediss://: the client certificate's key (PEM file)",
    'queue-timeout-seconds': 'how long to wait for Redis before reporting it unreachable',
  },
  numbers: ['queue-timeout-seconds'],
});

/** Environment variables that change what runs, by prefix; those that hold secrets are named, never shown. */
const SETTINGS =
  /^(IWIBENCH_|HF_|HUGGING_FACE_|ONNXRUNTIME_|CUDA_VISIBLE_DEVICES$|NVIDIA_TF32_OVERRIDE$|LD_LIBRARY_PATH$)/;
const SECRET = /TOKEN|KEY|PASSWORD|SECRET/;

export async function report(flags: typeof command.defaults) {
  const settings = hubSettings();
  const cached = cachedTargets(settings);
  const runtime = await onnxruntime();
  let cudaProbe: string | null = null;
  if (runtime.cuda.missing.length === 0) {
    // Everything is there: onnxruntime itself says whether it can use CUDA (a one-node session on it).
    cudaProbe = await prepareDevice('cuda').then(
      () => 'usable',
      (error: Error) => error.message,
    );
  }
  return {
    ...versions(),
    environment: Object.fromEntries(
      Object.keys(process.env)
        .filter((name) => SETTINGS.test(name))
        .sort()
        .map((name) => [name, SECRET.test(name) ? 'set' : process.env[name]!]),
    ),
    cpu: cpu(),
    kernels: kernelInfo() as Record<string, unknown>,
    arithmetic: Object.fromEntries(PRECISIONS.map((p) => [p, arithmeticName(p, 'cpu')])),
    onnxruntime: { ...runtime, cuda: { ...runtime.cuda, probe: cudaProbe, install: CUDA_INSTALL } },
    huggingface: {
      cache: settings.cacheDir,
      endpoint: settings.endpoint,
      token: settings.tokenSource ?? null,
      offline: settings.offline,
      checkpoints: cached,
    },
    memory: memory(),
    disk: freeDisk(settings.cacheDir),
    targets: targetNeeds(settings, cached),
    ...(flags.queue ? { queue: await (await import('./env/redis.ts')).queueReport(flags) } : {}),
  };
}

type Report = Awaited<ReturnType<typeof report>>;

/** Every leaf of a value as `key: value` lines, nested keys joined by dots (kernelInfo()'s fields, whatever they are). */
export function flatten(value: unknown, prefix = ''): string[] {
  if (
    value !== null &&
    typeof value === 'object' &&
    !(Array.isArray(value) && value.every((v) => typeof v !== 'object'))
  )
    return Object.entries(value).flatMap(([key, inner]) => flatten(inner, prefix ? `${prefix}.${key}` : key));
  return [`${prefix}: ${Array.isArray(value) ? value.join(', ') : String(value)}`];
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
const yes = (ok: boolean, no = 'does not fit') => (ok ? 'fits' : no);

export function reportText(r: Report): string {
  const lines: string[] = [];
  const section = (title: string, body: string[]) => lines.push(title, ...body.map((line) => `  ${line}`), '');
  section(`iwibench ${r.iwibench.version}${r.iwibench.commit ? ` (commit ${r.iwibench.commit})` : ''}`, [
    `at ${r.iwibench.root}`,
    `node ${r.node.version} (V8 ${r.node.v8}${r.node.glibc ? `, glibc ${r.node.glibc}` : ''})`,
    `${r.os.name ?? 'OS'}: ${r.os.kernel} (${r.os.platform})`,
  ]);
  section(
    'dependencies:',
    Object.entries(r.dependencies).map(([name, version]) => `${name} ${version ?? 'NOT INSTALLED (npm ci)'}`),
  );
  const settings = Object.entries(r.environment).map(([name, value]) => `${name}=${value}`);
  section('environment (the variables that change what runs):', settings.length > 0 ? settings : ['none set']);
  section(`cpu: ${r.cpu.model ?? 'unknown'}`, [
    `${r.cpu.logical_cpus} logical CPUs, ${r.cpu.available_parallelism} available to this process`,
    `instruction sets: ${r.cpu.instruction_sets.join(' ') || 'unknown'}${r.cpu.lacks.length > 0 ? `; lacks ${r.cpu.lacks.join(' ')}` : ''}`,
  ]);
  section('kernels (kernelInfo()):', flatten(r.kernels));
  section(
    'arithmetic (on the CPU):',
    Object.entries(r.arithmetic).map(([precision, name]) => `--precision ${precision}: ${name}`),
  );
  const ort = r.onnxruntime;
  const cuda = ort.cuda;
  section(`onnxruntime ${ort.version}: providers ${ort.providers.join(', ')}`, [
    `binding: ${ort.binding_dir ?? 'not found'}`,
    `CUDA (--device cuda): ${cuda.probe ?? `not usable here, missing ${cuda.missing.join(', ')}`}`,
    ...Object.entries(cuda.provider).map(([file, at]) => `${file}: ${at ?? 'missing (beside the binding)'}`),
    ...Object.entries(cuda.libraries).map(
      ([name, at]) =>
        `${name}: ${at.found ? `${at.found}${'not_on_loader_path' in at ? ' (not on the loader path: add its folder to LD_LIBRARY_PATH)' : ''}` : 'missing'}`,
    ),
    `NVIDIA driver: ${cuda.driver ?? 'none loaded'}; GPUs: ${cuda.gpus.join(', ') || 'none'}`,
    ...(cuda.probe === 'usable' ? [] : [`install: ${cuda.install}`]),
  ]);
  const hf = r.huggingface;
  section(`Hugging Face cache: ${hf.cache}`, [
    `endpoint ${hf.endpoint}; token ${hf.token ? `from ${hf.token}` : 'not set (HF_TOKEN, or hf auth login): the Gemma repositories are gated'}; offline ${hf.offline ? 'yes (HF_HUB_OFFLINE)' : 'no'}`,
    ...Object.entries(hf.checkpoints).map(([id, c]) => {
      const state =
        c.status === 'complete'
          ? `complete (${bytesText(c.bytes)})`
          : c.status === 'incomplete'
            ? `incomplete, missing ${c.missing.join(', ')} (npx iwibench download --model ${id} completes it)`
            : `absent (npx iwibench download --model ${id}, or any command with --model, fetches it)`;
      return `${id} at ${PINNED_REVISIONS[id]}: ${state}`;
    }),
  ]);
  const mem = r.memory;
  section(
    `memory: ${gib(mem.total)} total, ${gib(mem.available)} available${mem.cgroup_limit !== null ? `, cgroup limit ${gib(mem.cgroup_limit)}` : ''}; disk: ${bytesText(r.disk.free)} free at ${r.disk.path}`,
    Object.entries(r.targets).map(
      ([id, t]) =>
        `${id}: a run (the service and one evaluation process of ${gib(t.evaluation_process)}, weights ${gib(t.weights)}) ~${gib(t.run)}: ${yes(t.run_fits)}; two evaluations at once ~${gib(t.run_two_evaluations)}: ${yes(t.two_evaluations_fit, 'one at a time (the memory gate waits)')}; ${t.to_fetch > 0 ? `fetching ${bytesText(t.to_fetch)}: ${yes(t.disk_fits)}` : 'in the cache'}`,
    ),
  );
  if (r.queue) {
    const q = r.queue;
    section(
      `queue ${q.url}:`,
      'error' in q
        ? [`not reached: ${q.error}`]
        : [
            `Redis ${q.version}${q.tls ? ' over TLS' : ''}`,
            `maxmemory-policy ${q.maxmemory_policy}${q.noeviction ? '' : ' (the queue needs noeviction: its commands refuse this Redis)'}`,
            `appendonly ${q.appendonly ? 'yes' : 'no (a restart loses the queue)'}, appendfsync ${q.appendfsync ?? 'unknown'}`,
          ],
    );
  }
  return lines.join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const r = await report(flags);
  process.stdout.write(flags.json ? `${JSON.stringify(r, null, 2)}\n` : reportText(r));
}
