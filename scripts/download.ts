// npx iwibench download --model google/gemma-3-4b-it [--revision R] [--cache-dir DIR]
// Fetches a checkpoint into the Hugging Face cache as huggingface_hub lays it out (engine/hub/) and runs nothing: the
// files the text decoder and its tokenizer need, at the pinned revision of a pinned id (else --revision, default
// main), each blob checked against the Hub's SHA-256 before it enters the cache; an interrupted fetch resumes, a
// complete one is left as it is. HF_TOKEN (or `hf auth login`'s token file) for the gated Gemma repositories;
// HF_ENDPOINT, HF_HUB_CACHE, HF_HOME and HF_HUB_OFFLINE as huggingface_hub reads them. Every command that takes
// --model does the same first; this one is for fetching ahead (a new machine, before a long run).
import { bytesText, fetchCheckpoint, PINNED_REVISIONS } from '../engine/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { showFetchProgress } from './download-progress.ts';
import { count, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';

const pinned = Object.keys(PINNED_REVISIONS).join(', ');

export const command = defineCommand({
  usage: 'download',
  description:
    "Fetches a checkpoint's config, tokenizer and safetensors into the Hugging Face cache (huggingface_hub's layout), checked and resumable; runs nothing. The Gemma repositories are gated: HF_TOKEN (or hf auth login's token) of an account that accepted the licence.",
  examples: [
    'npx iwibench download --model google/gemma-3-4b-it',
    'npx iwibench download --model google/gemma-3-1b-it --cache-dir /data/hf/hub',
  ],
  defaults: {
    model: undefined as string | undefined,
    revision: undefined as string | undefined,
    'cache-dir': undefined as string | undefined,
    ...JSON_FLAG_DEFAULTS,
  },
  help: {
    model: `the repository id (pinned: ${pinned})`,
    revision: "a commit, branch or tag; default: a pinned id's pinned revision, else main",
    'cache-dir': 'Hugging Face cache root; default $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub',
    ...JSON_FLAG_HELP,
  },
  required: ['model'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const modelId = flags.model!;
  const display = showFetchProgress(modelId);
  let completed = false;
  const result = await fetchCheckpoint({
    modelId,
    revision: flags.revision,
    cacheDir: flags['cache-dir'],
    allowUnpinnedRevision: true, // asked for by name: fetching it runs nothing
    onEvent: display.onEvent,
  })
    .then((r) => ((completed = true), r))
    .finally(() => display.stop(completed));
  const what =
    result.fetched.length === 0
      ? `${modelId} at ${result.commit}: complete, nothing fetched`
      : `${modelId} at ${result.commit}: ${count(result.fetched.length, 'file')} fetched, ${bytesText(result.fetchedBytes)}`;
  printResult(
    flags.json,
    'download',
    {
      model: modelId,
      revision: result.commit,
      dir: result.dir,
      fetched: result.fetched,
      fetched_bytes: result.fetchedBytes,
    },
    { wrote: [[result.dir, what]] },
  );
}
