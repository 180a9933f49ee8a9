import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isClientGone, isDatabaseUnavailable, refusedValue, stoppedOnLimit, type RefusedValue } from '../db/errors.js';
import { TenantBusyError } from '../db/tenant-share.js';
import type { ErrorEnvelope, ErrorItem } from './error-envelope.js';

// For the handlers that build error items along with the errors they throw.
export type { ErrorItem };

/** An error a handler throws on purpose; it reaches the caller as it is. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly errors: ErrorItem[] | null = null,
    readonly headers: Record<string, string> = {},
    /** Fields beside the envelope's, for compatibility (the hosted API's `retry_after_seconds`). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The answer to credentials that name no client: a wrong key, an unknown client id and a revoked
 * key get the same one, so that a caller learns nothing about which client ids exist. So does a
 * request whose client was deleted while it was handled: the answer its next request will get.
 */
export const invalidCredentials = () =>
  new ApiError(401, 'Invalid credentials: the API key is not valid for this Data-Client-ID', [
    { loc: 'header/authorization', msg: 'Invalid API key for this client', type: 'invalid_credentials' },
  ]);

/**
 * The most problems an error answer lists: enough to fix a batch by, and a bound on the size of
 * the answer whatever the request. The message says how many there were.
 */
export const MAX_LISTED_PROBLEMS = 100;
/** Validation stops counting there: a request with more problems is answered "10000 or more". */
export const MAX_COUNTED_PROBLEMS = 10_000;

function invalidRequestMessage(count: number, countStopped = false): string {
  const listed = count > MAX_LISTED_PROBLEMS ? `; the first ${MAX_LISTED_PROBLEMS} are listed` : '';
  const counted = countStopped ? `${MAX_COUNTED_PROBLEMS} or more` : String(count);
  return `Invalid request: ${counted} problem${count === 1 ? '' : 's'} found${listed}`;
}

/** The error for a request that breaks rules a schema cannot express. */
export function invalidRequest(errors: ErrorItem[], status: 400 | 422 = 400): ApiError {
  return new ApiError(status, invalidRequestMessage(errors.length), errors);
}

/** A request that failed its schema: the problems listed, and how many there were in all. */
export class ValidationFailure extends Error {
  constructor(
    readonly problems: ErrorItem[],
    total: number,
    countStopped: boolean,
  ) {
    super(invalidRequestMessage(total, countStopped));
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Status for a request that fails validation: 400 (orders) or 422 (spend, exports). */
    validationStatus?: 400 | 422;
  }
}

const FRAMEWORK_MESSAGES: Record<string, (error: FastifyError, request: FastifyRequest) => string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (_error, request) =>
    `Request body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_error, request) =>
    `Content-Type must be ${((request.routeOptions.schema?.consumes as string[] | undefined) ?? ['application/json']).join(' or ')}`,
  FST_ERR_CTP_EMPTY_JSON_BODY: () => 'Request body is empty; send a JSON document',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'Content-Length does not match the body sent',
};

/**
 * What a value the database refused says about the request, whose fault it is: validation
 * should have caught it first, so this is a safety net that keeps such input from being a 500.
 */
const REFUSED_VALUE_MESSAGES: Record<RefusedValue, string> = {
  unstorable: 'A value in the request cannot be stored',
  too_long: 'A value in the request is too long to be stored',
  out_of_range: 'A value in the request is out of the range the service stores',
};

/**
 * The `order_id` of the innermost order (or alias) on the path `pointer` into `body`, so that a
 * caller can tell which order of a batch failed without counting array positions.
 */
function orderIdAt(body: unknown, pointer: string): string | undefined {
  let orderId: string | undefined;
  let node = body;
  for (const segment of ['', ...pointer.split('/').slice(1)]) {
    if (segment) node = (node as Record<string, unknown>)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (typeof node !== 'object' || node === null) break;
    const { order_id } = node as { order_id?: unknown };
    if (typeof order_id === 'string') orderId = order_id;
  }
  return orderId;
}

export function sendError(reply: FastifyReply, status: number, message: string, allErrors: ErrorItem[] | null = null, extra = {}) {
  const errors = allErrors && allErrors.slice(0, MAX_LISTED_PROBLEMS);
  for (const item of errors ?? []) {
    if (item.order_id !== undefined || !item.loc.startsWith('body')) continue;
    const orderId = orderIdAt(reply.request.body, item.loc.slice('body'.length));
    if (orderId !== undefined) item.order_id = orderId;
  }
  const body: ErrorEnvelope = { message, errors, request_id: reply.request.id, ...extra };
  return reply.code(status).type('application/json').send(body);
}

const DATABASE_RETRY_AFTER_SECONDS = 5;

const STOPPED_ON_LIMIT_MESSAGES = {
  statement_time: 'The database took longer than its time limit for a statement (DATABASE_QUERY_TIMEOUT_MS) on this request, and stopped it; send it again later, or ask for less',
  lock_wait: "Other work holds this client's data (attribution being computed, or a write): the request waited its limit for it and stopped; send it again shortly",
};

/** Gives every error, and every unknown route, the one envelope of the API. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((thrown: FastifyError, request, reply) => {
    const clientGone = isClientGone(thrown);
    if (clientGone) request.log.info('client deleted while the request was handled');
    const error = clientGone ? invalidCredentials() : thrown;
    if (error instanceof ApiError) {
      reply.headers(error.headers);
      return sendError(reply, error.statusCode, error.message, error.errors, error.extra);
    }
    if (error instanceof TenantBusyError) {
      reply.header('retry-after', String(error.retryAfterSeconds));
      return sendError(reply, 429, error.message, null, { retry_after_seconds: error.retryAfterSeconds });
    }
    if (error instanceof ValidationFailure) {
      return sendError(reply, request.routeOptions.config.validationStatus ?? 400, error.message, error.problems);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const message = FRAMEWORK_MESSAGES[error.code]?.(error, request) ?? error.message;
      return sendError(reply, status, message);
    }
    const limit = stoppedOnLimit(error);
    if (limit) {
      request.log.warn({ limit }, 'statement stopped by the database on a limit');
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return sendError(reply, 503, STOPPED_ON_LIMIT_MESSAGES[limit]);
    }
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: { code: (error as { code?: unknown }).code } }, 'database unavailable');
      reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
      return sendError(reply, 503, 'The database is unavailable; send the request again shortly');
    }
    const refused = refusedValue(error);
    if (refused) {
      request.log.warn({ err: error }, 'value rejected by the database');
      return sendError(reply, request.routeOptions.config.validationStatus ?? 400, REFUSED_VALUE_MESSAGES[refused]);
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, 500, 'Internal server error');
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, 404, `No route ${request.method} ${request.url.split('?')[0]}`));
}
