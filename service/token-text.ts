// How the OpenAI endpoints show tokens: each id's string and bytes, and where each token's text starts in a
// decoded text. Gemma's decoder (▁ → space, byte fallback, fuse) concatenates per-token pieces, so a token's text
// is its own decoding, except a byte-fallback piece (<0xE2>), which is one UTF-8 byte of a character spelled over
// several tokens: OpenAI shows those as "bytes:\xe2", and so do we.
import type { Tokenizer } from '../engine/index.ts';

/** One token as a client sees it: its string (special tokens as written, e.g. "<eos>") and its bytes. */
export type TokenShown = { token: string; bytes: number[] };

type Piece = TokenShown & { text: Uint8Array };

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;
const pieces = new WeakMap<Tokenizer, Map<number, Piece>>();

function piece(tokenizer: Tokenizer, id: number): Piece {
  let cache = pieces.get(tokenizer);
  if (!cache) pieces.set(tokenizer, (cache = new Map()));
  let found = cache.get(id);
  if (!found) {
    const byte = BYTE_PIECE.exec(tokenizer.idToToken(id) ?? '');
    if (byte) {
      const value = parseInt(byte[1]!, 16);
      found = { token: `bytes:\\x${byte[1]!.toLowerCase()}`, bytes: [value], text: Uint8Array.of(value) };
    } else {
      const token = tokenizer.decode([id], false);
      // What the token adds to a decoded text (special tokens are skipped there).
      found = {
        token,
        bytes: [...Buffer.from(token, 'utf8')],
        text: Buffer.from(tokenizer.decode([id], true), 'utf8'),
      };
    }
    cache.set(id, found);
  }
  return found;
}

export function showToken(tokenizer: Tokenizer, id: number): TokenShown {
  const { token, bytes } = piece(tokenizer, id);
  return { token, bytes };
}

/**
 * A decoded text (special tokens skipped, as `Tokenizer.decode` does) built one token at a time, with the offset at
 * which each token's text starts, in UTF-16 code units counted from `start`. The byte tokens that spell one
 * character all start where that character does.
 */
export class TextOffsets {
  readonly offsets: number[] = [];
  private readonly decoder = new TextDecoder('utf-8');
  private decoded = '';

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly start = 0,
  ) {}

  push(id: number): number {
    const offset = this.start + this.decoded.length;
    this.offsets.push(offset);
    this.decoded += this.decoder.decode(piece(this.tokenizer, id).text, { stream: true });
    return offset;
  }

  /** The text so far, with any character still being spelled in bytes left out. */
  get text(): string {
    return this.decoded;
  }
}

/** The decoded text of `ids` and where each token's text starts in it. */
export function textOffsets(
  tokenizer: Tokenizer,
  ids: readonly number[],
  start = 0,
): { text: string; offsets: number[] } {
  const track = new TextOffsets(tokenizer, start);
  for (const id of ids) track.push(id);
  return { text: track.text, offsets: track.offsets };
}
