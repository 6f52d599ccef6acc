// The activation buffers of one engine call, kept from one forward pass to the next. A decode step at 128 rows of the
// 1B shape writes ~0.4 GB of products (the head's logits alone are 128 MB). Written into fresh arrays, every step pays
// the page faults of that memory again and makes V8 re-mark its heap for it; written into these, a step reuses memory
// already mapped: 1.5× a whole evaluation (docs/benchmarks.md, "Fresh arrays"). They go with the call, so a large call
// keeps nothing once it ends.

/** Float32 buffers by slot name: what a slot hands out stays valid until the same slot is taken again. */
export class CallBuffers {
  private readonly slots = new Map<string, Float32Array>();

  /**
   * `length` floats of `slot`'s buffer, grown when shorter. Its contents are what was last written there: the taker
   * writes every element before it reads one.
   */
  take(slot: string, length: number): Float32Array {
    let buffer = this.slots.get(slot);
    if (!buffer || buffer.length < length) {
      buffer = new Float32Array(length);
      this.slots.set(slot, buffer);
    }
    return buffer.subarray(0, length);
  }
}
