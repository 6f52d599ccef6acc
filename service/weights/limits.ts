// The weight tools' size limits, in one place. The service reports them in the editor brief.
export const LIMITS = Object.freeze({
  /** Elements a slice read returns inline as JSON numbers; a larger selection comes back as an array handle. */
  inlineElements: 1024, // elements (≈ 8 k tokens of JSON)
  /** Elements an inline write operand may hold (values, U, V); larger operands go through handles. */
  inlineOperandElements: 65_536, // elements
  /** Live array handles per episode; creating one more evicts the least recently used. */
  handleCount: 64, // handles
  /** Bytes of live array handles per episode (float32 storage); the least recently used are evicted to fit. */
  handleBytes: 256 * 1024 * 1024, // bytes (256 MiB)
  /** Largest rank r of a low_rank_add (U [rows, r], V [cols, r]). */
  maxRank: 64, // rank
});

export type Limits = typeof LIMITS;
