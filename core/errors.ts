// The error codes every layer may throw, in one list: a stable code and what it means. Throw
// `new IwiError(code, message)`; what a code becomes on the wire (its HTTP status, fastify's reply shape) is the
// service's (service/errors.ts). Add codes here, never elsewhere.

export const ERROR_CODES = {
  // Weights: names, slices, operands (service/weights)
  WEIGHT_NOT_FOUND: 'no tensor (or alias) of that name in the checkpoint',
  WEIGHT_NOT_WRITABLE: 'the tensor is fixed (vision tower, projector, non-BF16 storage)',
  SLICE_INVALID: 'a slice is malformed (not integers, step 0, too many dims) or selects nothing',
  SLICE_OUT_OF_RANGE: 'a slice bound or index lies outside the tensor',
  SHAPE_MISMATCH: "an operand's shape differs from the shape the op needs",
  NON_FINITE_VALUE: 'an operand holds NaN or ±Inf, or a result overflows BF16 to ±Inf',
  OP_INVALID: 'an unknown op, a missing or mistyped field, or a parameter outside its limit',
  REVERT_OUT_OF_RANGE: 'revert to an op count the episode has not reached',
  // Array handles (service/weights/handles.ts)
  HANDLE_NOT_FOUND: 'no array handle of that id was ever issued',
  HANDLE_EXPIRED: 'the handle was evicted (oldest first) or released',
  HANDLE_FOREIGN: 'the handle belongs to another episode',
  HANDLE_LIMIT: 'one array is larger than the per-episode handle byte limit',
  // Episodes
  EPISODE_NOT_FOUND: 'no live episode of that id',
  EPISODE_SPEC_INVALID: 'an episode spec or its budgets are malformed',
  EPISODE_CLOSED: 'the episode was submitted or deleted; its tools are closed',
  EPISODE_NO_LEASE: 'the episode was created without a lease: there is none to renew',
  BUDGET_EXHAUSTED: 'the call would exceed one of the episode budgets; nothing was charged',
  // Service: auth, requests, capacity
  UNAUTHORIZED: 'missing or wrong bearer token',
  FORBIDDEN: 'the token is right but its role may not use this route or episode',
  REQUEST_INVALID: 'the request body does not match the route schema',
  QUEUE_FULL: 'too many requests are waiting for the execution queue; retry later',
  CALL_TIME_LIMIT:
    "a call ran longer than the service's per-call time limit and was stopped; its reservation was charged",
  MODEL_NOT_FOUND: 'no served model (pristine id or submitted patch digest) of that name',
  UNSUPPORTED_PARAMETER: 'a request parameter the target runtime does not support (e.g. sampling)',
  // The engine (engine/)
  ENGINE_INPUT_INVALID:
    'an engine call is malformed: an empty sequence, a token id outside the vocabulary, or a batch, token count, position range, layer or top-k out of range',
  ENGINE_SETTING_INVALID:
    'an engine setting (an option, --device or IWIBENCH_ISA) names no valid value, or one this machine does not have',
  // Patches (service/weights/patch.ts, export.ts)
  PATCH_INVALID: 'a patch folder is malformed, truncated, edited or of an unknown format or op',
  PATCH_BASE_MISMATCH: 'a patch was made for another model, revision or base tensor content',
  PATCH_DIGEST_MISMATCH: 'replaying a patch does not reproduce its recorded result digests',
  PATCH_ID_MISMATCH: 'a patch folder does not hold the patch id it was asked for (its files were changed or replaced)',
  PATCH_EXISTS: 'the output folder already exists',
  PEFT_UNSUPPORTED: 'the patch cannot be expressed as a PEFT LoRA adapter',
} as const satisfies Record<string, string>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class IwiError extends Error {
  override name = 'IwiError';

  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }

  /** Fields a reply carries beside code and message (none here; BudgetExceededError names the budget). */
  details(): Record<string, unknown> {
    return {};
  }
}

export function isIwiError(error: unknown, code?: ErrorCode): error is IwiError {
  return error instanceof IwiError && (code === undefined || error.code === code);
}

/** The longest stretch of user input an error message quotes. */
export const QUOTE_LIMIT = 200;

/**
 * User input as an error message quotes it: JSON, cut at `limit` characters with an ellipsis and the full length, so
 * a 1 MB model name or tensor name does not come back as a 1 MB message. Every message that quotes input uses this.
 */
export function quote(value: unknown, limit = QUOTE_LIMIT): string {
  if (typeof value === 'string' && value.length > limit)
    return `${JSON.stringify(value.slice(0, limit))}… (${value.length} characters)`;
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text;
}
