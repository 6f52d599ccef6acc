// The service's view of the error codes (core/errors.ts): the HTTP status each code maps to, and the reply every
// non-OpenAI route renders, `{statusCode, code, error, message}` (fastify's error shape, lib/errors.js style) plus
// the error's details. Every code has a status here (the type checker holds the table complete).
import { STATUS_CODES } from 'node:http';
import type { FastifyError } from 'fastify';
import type { ErrorReply as WireErrorReply } from './api/common.ts';
import { quote, type ErrorCode, type IwiError } from '../core/errors.ts';

export { IwiError, isIwiError, quote, QUOTE_LIMIT, type ErrorCode } from '../core/errors.ts';

export const HTTP_STATUS = {
  // Weights: names, slices, operands (service/weights)
  WEIGHT_NOT_FOUND: 404,
  WEIGHT_NOT_WRITABLE: 403,
  SLICE_INVALID: 422,
  SLICE_OUT_OF_RANGE: 422,
  SHAPE_MISMATCH: 422,
  NON_FINITE_VALUE: 422,
  OP_INVALID: 422,
  REVERT_OUT_OF_RANGE: 422,
  // Array handles (service/weights/handles.ts)
  HANDLE_NOT_FOUND: 404,
  HANDLE_EXPIRED: 410,
  HANDLE_FOREIGN: 403,
  HANDLE_LIMIT: 429,
  // Episodes
  EPISODE_NOT_FOUND: 404,
  EPISODE_SPEC_INVALID: 422,
  EPISODE_CLOSED: 409,
  EPISODE_NO_LEASE: 409,
  BUDGET_EXHAUSTED: 429,
  // Service: auth, requests, capacity
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  REQUEST_INVALID: 400,
  QUEUE_FULL: 503,
  CALL_TIME_LIMIT: 503,
  MODEL_NOT_FOUND: 404,
  UNSUPPORTED_PARAMETER: 400,
  // The engine (engine/): a malformed call the routes let through is the caller's; a setting is the operator's
  ENGINE_INPUT_INVALID: 400,
  ENGINE_SETTING_INVALID: 500,
  // Patches (service/weights/patch.ts, export.ts)
  PATCH_INVALID: 422,
  PATCH_BASE_MISMATCH: 409,
  PATCH_DIGEST_MISMATCH: 409,
  PATCH_ID_MISMATCH: 409,
  PATCH_EXISTS: 409,
  PEFT_UNSUPPORTED: 422,
} as const satisfies Record<ErrorCode, number>;

/** The wire shape (service/api) with a code of this table. */
export type ErrorReply = WireErrorReply & { code: ErrorCode };

export function httpStatus(error: IwiError): number {
  return HTTP_STATUS[error.code];
}

/** The reply body of an error: fastify's shape, then the error's own details (a refused budget's numbers). */
export function errorReply(error: IwiError): ErrorReply & Record<string, unknown> {
  const statusCode = httpStatus(error);
  return {
    statusCode,
    code: error.code,
    error: STATUS_CODES[statusCode] ?? 'Error',
    message: boundedMessage(error.message),
    ...error.details(),
  };
}

/** The longest message a reply carries; a safety net behind `quote` for messages that other libraries build. */
export const MESSAGE_LIMIT = 2000;

export function boundedMessage(message: string): string {
  return message.length > MESSAGE_LIMIT
    ? `${message.slice(0, MESSAGE_LIMIT)}… (${message.length} characters)`
    : message;
}

/** ajv's first error, with the field it concerns: `body/sequences/0 must NOT have additional properties ("prompts")`. */
export function describeValidation(error: FastifyError): string {
  const first = error.validation![0]!;
  const params = first.params as Record<string, unknown>;
  const detail = params.additionalProperty ?? params.missingProperty ?? params.allowedValues ?? params.limit;
  return `${error.validationContext ?? 'request'}${first.instancePath} ${first.message}${detail !== undefined ? ` (${quote(detail)})` : ''}`;
}
