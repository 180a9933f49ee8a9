import type { FastifyReply } from 'fastify';

/**
 * A signal aborted when the client of `reply`'s request goes away before the answer is sent
 * (it closed the connection, or its own time limit did): the database work done for it (a
 * report's statement, an explanation's) is cancelled rather than left running for nobody.
 */
export function abandonedSignal(reply: FastifyReply): AbortSignal {
  const abandoned = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abandoned.abort(new Error('The client closed the connection before the answer was sent'));
  });
  return abandoned.signal;
}
