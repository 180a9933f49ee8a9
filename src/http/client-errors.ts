import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorEnvelope } from './error-envelope.js';
import { SECURITY_HEADERS } from './security-headers.js';

/** What Node's parser refuses before Fastify sees a request, by its error code: status and message. */
const REFUSALS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request headers are larger than the limit of 16 KiB'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time'],
};
const MALFORMED: [number, string] = [400, 'The request is not valid HTTP'];

/**
 * Answers a request Node's HTTP parser refused (headers too large, a request that took too long,
 * bytes that are not HTTP) with our error envelope, where Fastify's default writes a shape of its
 * own, then closes the connection: nothing after such bytes can be read as a request.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = REFUSALS[error.code ?? ''] ?? MALFORMED;
  const requestId = randomUUID();
  const body = JSON.stringify({ message, errors: null, request_id: requestId } satisfies ErrorEnvelope);
  const headers = {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    connection: 'close',
  };
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`);
  }
  socket.destroy(error);
}
