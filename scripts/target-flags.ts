// Flags that name the target checkpoint, and the service the editor commands talk to (run-prime, run-pilot).
import path from 'node:path';
import { Checkpoint, type CheckpointLocation } from '../service/model/checkpoint.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import { AdminClient } from '../taskset/service-client.ts';
import { readServiceEnv, startServiceProcess, type ServiceEnv } from '../taskset/service-process.ts';

export const TARGET_FLAG_DEFAULTS = {
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  model: undefined as string | undefined,
  revision: undefined as string | undefined,
};

type TargetFlags = typeof TARGET_FLAG_DEFAULTS;

export function locationFromFlags(flags: TargetFlags): CheckpointLocation {
  return { modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], modelId: flags.model, revision: flags.revision };
}

/** The target's tokenizer, and its id and revision (what the service must also serve). */
export async function openTarget(flags: TargetFlags): Promise<{ location: CheckpointLocation; tokenizer: Tokenizer; modelId: string; revision: string }> {
  const location = locationFromFlags(flags);
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  const { modelId, revision } = checkpoint;
  checkpoint.close();
  return { location, tokenizer, modelId, revision };
}

/**
 * The service of `--service-env FILE`, or one started here on the same checkpoint (stopped by `stop`). Either way
 * it must serve the checkpoint the evaluation will use.
 */
export async function serviceFor(serviceEnv: string | undefined, flags: TargetFlags, outputDir: string, expected: { modelId: string; revision: string }): Promise<{ service: ServiceEnv; stop: () => Promise<void> }> {
  let service: ServiceEnv;
  let stop = async () => {};
  if (serviceEnv) service = readServiceEnv(serviceEnv);
  else {
    const started = await startServiceProcess({ modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], model: flags.model, revision: flags.revision, outputDir: path.join(outputDir, 'service') });
    service = started;
    stop = started.stop;
  }
  const health = await new AdminClient(service.url, service.adminToken).health();
  if (health.model !== expected.modelId || health.revision !== expected.revision) {
    await stop();
    throw new Error(`the service serves ${health.model}@${health.revision}, but evaluation would use ${expected.modelId}@${expected.revision}`);
  }
  return { service, stop };
}
