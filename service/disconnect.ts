// One AbortSignal per request that fires when its client goes away before the reply is complete (a closed tab, a
// client's timeout, a stream the reader stopped): the execution queue then drops the request's job if it has not
// started, and a started generation stops at its next token.
import type { FastifyReply } from 'fastify';
import { clientGone } from './queue.ts';

export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  const onClose = () => {
    if (!response.writableFinished) controller.abort(clientGone());
  };
  if (response.destroyed || response.socket?.destroyed) onClose();
  else response.once('close', onClose);
  return controller.signal;
}
