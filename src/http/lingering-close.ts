import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Bounds on what is read of a body after it was answered: the most bytes, the longest wait for
 * the next ones, and the longest time (nginx's lingering close waits 5 s and 30 s by default).
 */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
export const LINGER_IDLE_MS = 5_000;
export const LINGER_MAX_MS = 30_000;

/** How to close each connection whose request was answered before its body arrived whole. */
const lingeringCloses = new WeakMap<Socket, () => void>();

function destroySoonLingering(this: Socket) {
  const lingeringClose = lingeringCloses.get(this);
  lingeringCloses.delete(this);
  if (lingeringClose) lingeringClose();
  else Socket.prototype.destroySoon.call(this);
}

/**
 * Node closes a connection once it has answered a request with `Connection: close`, as Fastify
 * answers a body it refuses (413) before reading it all. If the client is still sending then, the
 * kernel answers its next bytes with a reset: a client that sends the whole body before reading
 * the answer gets a broken pipe instead of the 413. So the rest of the body is read and thrown
 * away, and the connection, its answer sent, is closed once the client has sent it all, or has
 * stopped, or past the bounds above.
 */
function discardRestOfBody(request: IncomingMessage) {
  const socket = request.socket;
  let discarded = 0;
  let idle: NodeJS.Timeout | undefined;
  request.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > LINGER_MAX_BYTES) socket.destroy();
    idle?.refresh();
  });
  lingeringCloses.set(socket, () => {
    if (request.complete) return Socket.prototype.destroySoon.call(socket);
    socket.end();
    const close = () => socket.destroy();
    idle = setTimeout(close, LINGER_IDLE_MS);
    const deadline = setTimeout(close, LINGER_MAX_MS);
    request.once('end', close);
    socket.once('close', () => {
      clearTimeout(idle);
      clearTimeout(deadline);
    });
  });
  socket.destroySoon = destroySoonLingering;
}

/** Gives every request answered before its body was read whole a lingering close. */
export function registerLingeringClose(app: FastifyInstance) {
  app.addHook('onSend', async (request) => {
    if (!request.raw.complete) discardRestOfBody(request.raw);
  });
}
