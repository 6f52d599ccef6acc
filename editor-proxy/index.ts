// Public surface of the editor proxy (README.md): the app factory and the pieces its tests and CLI use.
export { buildProxy, PROXY_DEFAULTS, upstreamBaseUrl, type ProxyOptions } from './app.ts';
export { ProxyError } from './errors.ts';
export {
  assembleChatCompletion,
  readChatCompletionStream,
  IncompleteStreamError,
  type AssembledMessage,
} from './sse.ts';
export { backoffMs, parseRetryAfter, RETRY_STATUSES } from './upstream.ts';
