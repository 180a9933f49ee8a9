import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body exactly as received, for handlers that store it without re-encoding. */
    rawBody?: string;
  }
}

/**
 * PostgreSQL text cannot hold U+0000 nor half of a surrogate pair, and JSON can spell both as
 * escapes; such strings are refused here rather than failing later in the database.
 */
function findUnstorableString(root: unknown): string | undefined {
  const unstorable = (text: string) => text.includes('\u0000') || !text.isWellFormed();
  // An explicit stack: the depth of a client's JSON must not decide the depth of ours.
  const pending: [unknown, string][] = [[root, '']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, pointer] = next;
    if (typeof value === 'string' && unstorable(value)) return pointer;
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      if (unstorable(key)) return pointer;
      pending.push([child, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`]);
    }
  }
  return undefined;
}

/** JSON is the only body the API takes; any other content type is answered 415. */
export function registerJsonBody(app: FastifyInstance) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
    const body = text as string;
    if (body.length === 0) return done(new ApiError(400, 'Request body is empty; send a JSON document'), undefined);
    let value: unknown;
    try {
      value = secureJson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
    } catch (error) {
      // secure-json-parse reports a forbidden key as a SyntaxError too, with this message.
      const message = /forbidden prototype property/.test((error as Error).message)
        ? 'Request body must not contain __proto__ or constructor.prototype keys'
        : `Request body is not valid JSON: ${(error as Error).message}`;
      return done(new ApiError(400, message), undefined);
    }
    const unstorable = body.includes('\\u') ? findUnstorableString(value) : undefined;
    if (unstorable !== undefined) {
      return done(
        new ApiError(400, 'Request body has a string the service cannot store', [
          { loc: `body${unstorable}`, msg: 'Must not contain NUL characters or unpaired surrogates', type: 'invalid_string' },
        ]),
        undefined,
      );
    }
    request.rawBody = body;
    done(null, value);
  });
}
