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
function findUnstorableString(value: unknown, pointer = ''): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') || !value.isWellFormed() ? pointer : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const found =
      findUnstorableString(key, pointer) ??
      findUnstorableString(child, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    if (found !== undefined) return found;
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
      const message =
        error instanceof SyntaxError
          ? `Request body is not valid JSON: ${error.message}`
          : 'Request body must not contain __proto__ or constructor.prototype keys';
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
