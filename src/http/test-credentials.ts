import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { ApiError } from './errors.js';
import { meteredBody } from './metered-body.js';

/**
 * The largest body the public UAT test credentials may send. They are shared by everyone and
 * checked by a process that serves production too: a batch of 1,000 realistic orders is about
 * 1 MB, which they are for trying; the 32 MiB bodies of production pipelines are not.
 */
export const TEST_CREDENTIALS_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

const tooLarge = () =>
  new ApiError(413, `Request body is larger than the limit of ${TEST_CREDENTIALS_BODY_LIMIT_BYTES} bytes for the UAT test credentials`);

/** A preParsing hook: the test credentials' bodies held to their limit, as announced and as they arrive. */
export async function limitTestCredentialBodies(request: FastifyRequest, _reply: unknown, payload: Readable): Promise<Readable> {
  if (!request.tenant.dryRun) return payload;
  if (Number(request.headers['content-length']) > TEST_CREDENTIALS_BODY_LIMIT_BYTES) throw tooLarge();
  return meteredBody(payload, (soFar) => {
    if (soFar > TEST_CREDENTIALS_BODY_LIMIT_BYTES) throw tooLarge();
  });
}
