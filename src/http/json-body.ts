import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { ApiError } from './errors.js';
import { pointersWhere } from './json-pointers.js';
import { costlyShape } from './json-shape.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The JSON body exactly as received (less a byte-order mark), for handlers that store it as is. */
    rawBody?: string;
  }
}

const BYTE_ORDER_MARK = '\uFEFF';
/** Refuses bytes that are not UTF-8, where a lenient decoder would store U+FFFD in their place. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const UTF8 = /^utf-?8$/i;

/** PostgreSQL text can hold neither U+0000 nor half of a surrogate pair; JSON can spell both. */
const unstorable = (value: unknown) => typeof value === 'string' && (value.includes('\u0000') || !value.isWellFormed());

function charsetOf(request: FastifyRequest): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
}

const UNSTORABLE = 'Must not contain NUL characters or unpaired surrogates';

/** Query strings can spell U+0000 too (%00); refused before validation, by name. */
export function registerQueryCheck(app: FastifyInstance) {
  app.addHook('preValidation', async (request) => {
    const unstorableAt = pointersWhere(request.query, unstorable);
    if (unstorableAt.length === 0) return;
    throw new ApiError(
      request.routeOptions.config.validationStatus ?? 400,
      'Query string has values the service cannot read',
      unstorableAt.map((pointer) => ({ loc: `query${pointer}`, msg: UNSTORABLE, type: 'invalid_string' })),
    );
  });
}

/**
 * Reads a JSON body as the API does: UTF-8 only, of a shape cheap to parse (json-shape.ts), no
 * forbidden keys, no unstorable strings. A content-type parser, for routes that take JSON under another type too.
 */
export function parseJsonBody(request: FastifyRequest, bytes: string | Buffer, done: (error: Error | null, body?: unknown) => void) {
  // A body that cannot be read is an invalid request like any other: 400, or 422 on spend.
  const invalid = request.routeOptions.config.validationStatus ?? 400;
  const fail = (status: number, message: string, errors: ApiError['errors'] = null) =>
    done(new ApiError(status, message, errors), undefined);
  const charset = charsetOf(request);
  if (charset !== undefined && !UTF8.test(charset)) return fail(415, `JSON must be sent as UTF-8, not ${charset}`);
  const costly = costlyShape(bytes as Buffer);
  if (costly !== undefined) return fail(invalid, `Request body ${costly}, unlike any request of this API; it was not read`);

  let text: string;
  try {
    text = utf8.decode(bytes as Buffer);
  } catch {
    return fail(invalid, 'Request body is not valid UTF-8');
  }
  const body = text.startsWith(BYTE_ORDER_MARK) ? text.slice(1) : text;
  if (body.length === 0) {
    // Clients that always send a Content-Type may send no body to a route that takes none, or whose body is optional.
    if (!request.routeOptions.schema?.body || request.routeOptions.config.optionalBody) return done(null, undefined);
    return fail(invalid, 'Request body is empty; send a JSON document');
  }
  let value: unknown;
  try {
    value = secureJson.parse(body, null, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    // secure-json-parse reports a forbidden key as a SyntaxError too, with this message.
    const message = /forbidden prototype property/.test((error as Error).message)
      ? 'Request body must not contain __proto__ or constructor.prototype keys'
      : `Request body is not valid JSON: ${(error as Error).message}`;
    return fail(invalid, message);
  }
  const unstorableAt = body.includes('\\u') ? pointersWhere(value, unstorable) : [];
  if (unstorableAt.length > 0) {
    return fail(
      invalid,
      'Request body has strings the service cannot store',
      unstorableAt.map((pointer) => ({ loc: `body${pointer}`, msg: UNSTORABLE, type: 'invalid_string' })),
    );
  }
  request.rawBody = body;
  done(null, value);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body may be left out, even with a Content-Type: its handler gets the body its preValidation gives. */
    optionalBody?: true;
  }
}

/** JSON is the only body the API takes; any other content type is answered 415. */
export function registerJsonBody(app: FastifyInstance) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);
}
