// Flags that name the target checkpoint, and the service the editor commands talk to (run-prime, run-pilot). A target
// named by id is fetched into the Hugging Face cache where it is missing (fetchedLocation), unless --offline.
import path from 'node:path';
import {
  Checkpoint,
  type CheckpointLocation,
  DEFAULT_PRECISION,
  type Device,
  DEVICES,
  PINNED_REVISIONS,
  fetchCheckpoint,
  hubSettings,
  PRECISIONS,
  type Precision,
  Tokenizer,
} from '../engine/index.ts';
import type { ServiceEnv } from '../taskset/index.ts';
import { readServiceEnv, serviceFromEnv, startServiceProcess } from './service-process.ts';
import { showFetchProgress } from './download-progress.ts';

export const TARGET_FLAG_DEFAULTS = {
  model: undefined as string | undefined,
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  'allow-unpinned-revision': false,
  offline: false,
  device: 'cpu',
  precision: DEFAULT_PRECISION as string,
};

const pinned = Object.keys(PINNED_REVISIONS).join(', ');
export const TARGET_FLAG_HELP = {
  model: `target id in the Hugging Face cache, fetched into it where missing (HF_TOKEN for the gated Gemma ones; pinned: ${pinned})`,
  'model-dir': 'a checkpoint folder, instead of the cache (or a cache repo folder models--ORG--NAME)',
  'cache-dir': 'Hugging Face cache root; default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub',
  revision: "snapshot commit or ref name; default: a pinned id's pinned revision, else refs/main",
  'allow-unpinned-revision': 'accept a --revision of a pinned id other than the pinned one',
  offline: 'never touch the network (as HF_HUB_OFFLINE=1): a --model missing from the cache is an error, not fetched',
  device:
    'where the projections run: cpu (the BF16 kernel), cuda or webgpu (onnxruntime GPU providers, unverified on a GPU), ort-cpu (the GPU path on the CPU)',
  precision:
    "the engine's arithmetic: bf16 (as the original, PyTorch in torch.bfloat16: BF16 activations, float32 norms, softmax and logits) or float32 (exact float32 over the BF16 weights)",
};

/** `--device` (docs/engine.md, "GPU") and `--precision`: one definition for every command that runs the engine. */
export const TARGET_FLAG_CHOICES = { device: [...DEVICES] as string[], precision: [...PRECISIONS] as string[] };

/** --device as the engine takes it (parseCommand has checked it against TARGET_FLAG_CHOICES). */
export function deviceFromFlags(flags: { device: string }): Device {
  return flags.device as Device;
}

/** --precision as the engine takes it (parseCommand has checked it against TARGET_FLAG_CHOICES). */
export function precisionFromFlags(flags: { precision: string }): Precision {
  return flags.precision as Precision;
}

type TargetFlags = typeof TARGET_FLAG_DEFAULTS;

export function locationFromFlags(flags: Omit<TargetFlags, 'offline'>): CheckpointLocation {
  const location: CheckpointLocation = {
    modelDir: flags['model-dir'],
    cacheDir: flags['cache-dir'],
    modelId: flags.model,
    revision: flags.revision,
  };
  return flags['allow-unpinned-revision'] ? { ...location, allowUnpinnedRevision: true } : location;
}

/**
 * locationFromFlags, with what a --model target lacks in the cache fetched first (engine/hub/: progress on stderr);
 * offline (--offline or HF_HUB_OFFLINE), nothing is fetched and opening it gives the cache's own error.
 */
export async function fetchedLocation(flags: TargetFlags): Promise<CheckpointLocation> {
  const location = locationFromFlags(flags);
  const { modelId, modelDir, revision, cacheDir, allowUnpinnedRevision } = location;
  if (modelDir || !modelId || flags.offline || hubSettings().offline) return location;
  const display = showFetchProgress(modelId);
  let completed = false;
  try {
    await fetchCheckpoint({ modelId, revision, cacheDir, allowUnpinnedRevision, onEvent: display.onEvent });
    completed = true;
  } finally {
    display.stop(completed);
  }
  return location;
}

export function hasTargetFlags(flags: TargetFlags): boolean {
  return Boolean(flags['model-dir'] || flags.model);
}

/**
 * The target's tokenizer, and its id and revision (what the service must also serve). The location is returned
 * resolved (cache root and commit hash written out), so fresh evaluation processes open exactly the same snapshot.
 */
export async function openTarget(
  flags: TargetFlags,
): Promise<{ location: CheckpointLocation; tokenizer: Tokenizer; modelId: string; revision: string }> {
  const location = await fetchedLocation(flags);
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  const { modelId, revision } = checkpoint;
  checkpoint.close();
  const resolved = location.modelDir
    ? location
    : { ...location, cacheDir: path.dirname(path.dirname(path.dirname(checkpoint.dir))), revision };
  return { location: resolved, tokenizer, modelId, revision };
}

/**
 * The service: of `--service-env FILE`; else the one the environment names (IWIBENCH_ADMIN_TOKEN and
 * IWIBENCH_EDITOR_TOKEN set, at IWIBENCH_SERVICE_URL or 127.0.0.1:8768); else one started here on the target's
 * checkpoint (stopped by `stop`). Without target flags the checkpoint is the one the service serves, found in the
 * Hugging Face cache. Either way the service must serve the checkpoint the evaluation will use.
 */
export async function serviceAndTarget(serviceEnv: string | undefined, flags: TargetFlags, outputDir: string) {
  const external = serviceEnv ? readServiceEnv(serviceEnv) : serviceFromEnv();
  let target: Awaited<ReturnType<typeof openTarget>>;
  if (external && !hasTargetFlags(flags)) {
    const health = await healthOf(external);
    target = await openTarget({ ...flags, model: health.model, revision: health.revision });
  } else target = await openTarget(flags);
  let service: ServiceEnv;
  let stop = async () => {};
  if (external) service = external;
  else {
    const { modelDir, cacheDir, modelId: model, revision } = target.location;
    const started = await startServiceProcess({
      modelDir,
      cacheDir,
      model,
      revision,
      device: flags.device,
      precision: flags.precision,
      outputDir: path.join(outputDir, 'service'),
    });
    service = started;
    stop = started.stop;
  }
  const health = await healthOf(service);
  if (health.model !== target.modelId || health.revision !== target.revision) {
    await stop();
    throw new Error(
      `the service serves ${health.model}@${health.revision}, but evaluation would use ${target.modelId}@${target.revision}`,
    );
  }
  // The editor's run_target view must be what evaluation sees: both run the projections on the same device.
  if ((health.device ?? 'cpu') !== flags.device) {
    await stop();
    throw new Error(
      `the service runs its projections on --device ${health.device ?? 'cpu'}, but evaluation would use --device ${flags.device}`,
    );
  }
  // And in the same arithmetic (a service of before the precision setting computed in float32).
  if ((health.precision ?? 'float32') !== flags.precision) {
    await stop();
    throw new Error(
      `the service computes in --precision ${health.precision ?? 'float32'}, but evaluation would use --precision ${flags.precision}`,
    );
  }
  return { target, service, stop };
}

async function healthOf(service: ServiceEnv) {
  // The taskset only here: an engine command (logits, generate, the service itself) then loads none of it, ~1.2 s.
  const { AdminClient } = await import('../taskset/index.ts');
  try {
    return await new AdminClient(service.url, service.adminToken).health();
  } catch (error) {
    const hint = 'start one with npx iwibench service, or leave IWIBENCH_ADMIN_TOKEN unset to have one started here';
    throw new Error(`no service answers at ${service.url} (${(error as Error).message}); ${hint}`);
  }
}

export const SERVICE_ENV_HELP =
  'file with IWIBENCH_SERVICE_URL, IWIBENCH_ADMIN_TOKEN, IWIBENCH_EDITOR_TOKEN; default: those variables (URL 127.0.0.1:8768), else a service started here';

/** `--max-batch N` of the commands that evaluate: the rows each evaluation process keeps in flight. */
export const BATCH_FLAG_DEFAULTS = { 'max-batch': undefined as number | undefined };
export const BATCH_FLAG_HELP = {
  'max-batch':
    'sequences each evaluation keeps in flight (continuous batching); default: what free memory allows, up to where measured tokens per second stop rising',
};

/** --max-batch as the evaluator takes it (undefined: chosen from memory and measured speed); 0 is refused. */
export function maxBatchFromFlags(flags: { 'max-batch': number | undefined }): number | undefined {
  const n = flags['max-batch'];
  if (n !== undefined && !(Number.isInteger(n) && n >= 1))
    throw new Error(`--max-batch must be a positive integer, got ${n}`);
  return n;
}

/** --max-batch as an in-process ItemEvaluator takes it (undefined: chosen from memory and measured speed). */
export function batchLimitFromFlags(flags: { 'max-batch': number | undefined }): { maxBatch: number } | undefined {
  const maxBatch = maxBatchFromFlags(flags);
  return maxBatch === undefined ? undefined : { maxBatch };
}
