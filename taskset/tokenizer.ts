// The real Gemma 3 tokenizer, loaded once per process (≈ 2.5 s): the taskset needs it only for relevant token ids.
import { gemma3TokenizerDir, Tokenizer } from '../engine/index.ts';

let loading: Promise<Tokenizer> | undefined;

export function gemma3Tokenizer(): Promise<Tokenizer> {
  loading ??= Tokenizer.load(gemma3TokenizerDir());
  return loading;
}
