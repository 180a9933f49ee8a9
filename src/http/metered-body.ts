import { Transform, type Readable } from 'node:stream';

/**
 * `payload` passed on as it arrives, `check` awaited with the body's bytes so far and the
 * chunk's before each chunk goes on: a body is refused (`check` throws) as soon as it is too
 * large, never read to its end first. The stream carries `receivedEncodedLength`, by which
 * Fastify holds a body a preParsing hook returned to the route's limit.
 */
export function meteredBody(payload: Readable, check: (bytesSoFar: number, chunkBytes: number) => Promise<void> | void): Readable {
  let received = 0;
  const metered = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      Object.assign(metered, { receivedEncodedLength: received });
      Promise.resolve()
        .then(() => check(received, chunk.length))
        .then(() => done(null, chunk), (error: Error) => done(error));
    },
  });
  payload.on('error', (error) => metered.destroy(error));
  return payload.pipe(metered);
}
