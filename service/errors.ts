// Every error the service reports to a client, in one table (fastify lib/errors.js style): a stable code, the HTTP
// status it maps to, and what it means. Throw `new IwiError(code, message)`; the service's error handler renders
// `error.toReply()` as `{statusCode, code, error, message}` (fastify's error shape). Add rows here, never elsewhere.
import { STATUS_CODES } from 'node:http';
import type { FastifyError } from 'fastify';
import type { ErrorReply as WireErrorReply } from './api/common.ts';

export const ERRORS = {
  // Weights: names, slices, operands (service/weights)
  WEIGHT_NOT_FOUND: { status: 404, meaning: 'no tensor (or alias) of that name in the checkpoint' },
  WEIGHT_NOT_WRITABLE: { status: 403, meaning: 'the tensor is fixed (vision tower, projector, non-BF16 storage)' },
  SLICE_INVALID: { status: 422, meaning: 'a slice is malformed (not integers, step 0, too many dims) or selects nothing' },
  SLICE_OUT_OF_RANGE: { status: 422, meaning: 'a slice bound or index lies outside the tensor' },
  SHAPE_MISMATCH: { status: 422, meaning: "an operand's shape differs from the shape the op needs" },
  NON_FINITE_VALUE: { status: 422, meaning: 'an operand holds NaN or ±Inf, or a result overflows BF16 to ±Inf' },
  OP_INVALID: { status: 422, meaning: 'an unknown op, a missing or mistyped field, or a parameter outside its limit' },
  REVERT_OUT_OF_RANGE: { status: 422, meaning: 'revert to an op count the episode has not reached' },
  // Array handles (service/weights/handles.ts)
  HANDLE_NOT_FOUND: { status: 404, meaning: 'no array handle of that id was ever issued' },
  HANDLE_EXPIRED: { status: 410, meaning: 'the handle was evicted (oldest first) or released' },
  HANDLE_FOREIGN: { status: 403, meaning: 'the handle belongs to another episode' },
  HANDLE_LIMIT: { status: 429, meaning: 'one array is larger than the per-episode handle byte limit' },
  // Episodes
  EPISODE_NOT_FOUND: { status: 404, meaning: 'no live episode of that id' },
  EPISODE_SPEC_INVALID: { status: 422, meaning: 'an episode spec or its budgets are malformed' },
  EPISODE_CLOSED: { status: 409, meaning: 'the episode was submitted or deleted; its tools are closed' },
  BUDGET_EXHAUSTED: { status: 429, meaning: 'the call would exceed one of the episode budgets; nothing was charged' },
  // Service: auth, requests, capacity
  UNAUTHORIZED: { status: 401, meaning: 'missing or wrong bearer token' },
  FORBIDDEN: { status: 403, meaning: 'the token is right but its role may not use this route or episode' },
  REQUEST_INVALID: { status: 400, meaning: 'the request body does not match the route schema' },
  QUEUE_FULL: { status: 503, meaning: 'too many requests are waiting for the execution queue; retry later' },
  CALL_TIME_LIMIT: { status: 503, meaning: "a call ran longer than the service's per-call time limit and was stopped; its reservation was charged" },
  MODEL_NOT_FOUND: { status: 404, meaning: 'no served model (pristine id or submitted patch digest) of that name' },
  UNSUPPORTED_PARAMETER: { status: 400, meaning: 'a request parameter the target runtime does not support (e.g. sampling)' },
  // Patches (service/weights/patch.ts, export.ts)
  PATCH_INVALID: { status: 422, meaning: 'a patch folder is malformed, truncated, edited or of an unknown format or op' },
  PATCH_BASE_MISMATCH: { status: 409, meaning: "a patch was made for another model, revision or base tensor content" },
  PATCH_DIGEST_MISMATCH: { status: 409, meaning: "replaying a patch does not reproduce its recorded result digests" },
  PATCH_ID_MISMATCH: { status: 409, meaning: 'a patch folder does not hold the patch id it was asked for (its files were changed or replaced)' },
  PATCH_EXISTS: { status: 409, meaning: 'the output folder already exists' },
  PEFT_UNSUPPORTED: { status: 422, meaning: 'the patch cannot be expressed as a PEFT LoRA adapter' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** The wire shape (service/api) with a code of this table. */
export type ErrorReply = WireErrorReply & { code: ErrorCode };

export class IwiError extends Error {
  override name = 'IwiError';
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.statusCode = ERRORS[code].status;
  }

  toReply(): ErrorReply {
    return { statusCode: this.statusCode, code: this.code, error: STATUS_CODES[this.statusCode] ?? 'Error', message: boundedMessage(this.message) };
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
  if (typeof value === 'string' && value.length > limit) return `${JSON.stringify(value.slice(0, limit))}… (${value.length} characters)`;
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text;
}

/** The longest message a reply carries; a safety net behind `quote` for messages that other libraries build. */
export const MESSAGE_LIMIT = 2000;

export function boundedMessage(message: string): string {
  return message.length > MESSAGE_LIMIT ? `${message.slice(0, MESSAGE_LIMIT)}… (${message.length} characters)` : message;
}

/** ajv's first error, with the field it concerns: `body/sequences/0 must NOT have additional properties ("prompts")`. */
export function describeValidation(error: FastifyError): string {
  const first = error.validation![0]!;
  const params = first.params as Record<string, unknown>;
  const detail = params.additionalProperty ?? params.missingProperty ?? params.allowedValues ?? params.limit;
  return `${error.validationContext ?? 'request'}${first.instancePath} ${first.message}${detail !== undefined ? ` (${quote(detail)})` : ''}`;
}
