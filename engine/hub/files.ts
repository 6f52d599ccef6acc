// Which files of a checkpoint repository are fetched, and whether a snapshot in the cache holds them. Only what the
// text decoder and its tokenizer need: the configs, the tokenizer files and the safetensors weights with their
// index; not the README, the image processor's configs or other weight formats.
import { existsSync, lstatSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** The files besides the weights, each fetched where the repository has it (top level only). */
export const CONFIG_FILES: readonly string[] = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'tokenizer.model', // the SentencePiece model: transformers' slow tokenizer, for the Python tools sharing the cache
  'special_tokens_map.json',
  'added_tokens.json',
  'chat_template.json',
  'chat_template.jinja',
];
export const INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_WEIGHTS = 'model.safetensors';

/** What the engine cannot open a snapshot without (engine/checkpoint.ts, engine/tokenizer.ts), besides the weights. */
const REQUIRED: readonly string[] = ['config.json', 'tokenizer.json', 'tokenizer_config.json'];

/** models--org--name, huggingface_hub's folder of a model repository in the cache. */
export function repoFolder(cacheDir: string, modelId: string): string {
  return path.join(cacheDir, `models--${modelId.replaceAll('/', '--')}`);
}

/** Whether a repository path is one of the files fetched (weights: every top-level .safetensors, until the index says). */
export function isWanted(file: string): boolean {
  if (file.includes('/')) return false;
  return CONFIG_FILES.includes(file) || file === INDEX_FILE || file.endsWith('.safetensors');
}

/** The shards an index names (its weight_map's files), sorted; throws on an index that is not one. */
export function shardsOf(indexText: string, where: string): string[] {
  let index: { weight_map?: unknown };
  try {
    index = JSON.parse(indexText) as { weight_map?: unknown };
  } catch (error) {
    throw new Error(`${where} is not valid JSON: ${(error as Error).message}`);
  }
  const map = index.weight_map;
  if (!map || typeof map !== 'object' || Object.values(map).some((v) => typeof v !== 'string'))
    throw new Error(`${where} has no weight_map of file names`);
  return [...new Set(Object.values(map as Record<string, string>))].sort();
}

/**
 * Whether a snapshot folder holds everything the engine opens: the required files and every shard its index names
 * (or model.safetensors), each a link that resolves. `missing` names what is not there.
 */
export function snapshotStatus(dir: string): { complete: boolean; missing: string[] } {
  const there = (file: string) => existsSync(path.join(dir, file)); // follows the link: a dangling one is missing
  const missing = REQUIRED.filter((file) => !there(file));
  if (there(INDEX_FILE)) {
    try {
      missing.push(...shardsOf(readFileSync(path.join(dir, INDEX_FILE), 'utf8'), INDEX_FILE).filter((f) => !there(f)));
    } catch {
      missing.push(INDEX_FILE);
    }
  } else if (!there(SINGLE_WEIGHTS)) missing.push(SINGLE_WEIGHTS);
  return { complete: missing.length === 0, missing: missing.map((file) => describe(dir, file)) };
}

/** A missing file, or the blob its link names (the cache holds the link, the blob was lost). */
function describe(dir: string, file: string): string {
  const link = path.join(dir, file);
  if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink())
    return `${file} (it links to ${readlinkSync(link)}, which is missing)`;
  return file === SINGLE_WEIGHTS ? `${file} (or ${INDEX_FILE})` : file;
}
