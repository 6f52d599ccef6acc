// One AbortSignal per request that fires when its client goes away before the reply is complete (a closed tab, a
// client's timeout, a stream the reader stopped). Passed to the execution queue (`run(lane, task, { signal })`), it
// drops the request's job if it has not started, or stops it at its next slice.
import type { FastifyReply } from 'fastify';

export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  const onClose = () => {
    if (!response.writableFinished) controller.abort();
  };
  if (response.destroyed || response.socket?.destroyed) onClose();
  else response.once('close', onClose);
  return controller.signal;
}
