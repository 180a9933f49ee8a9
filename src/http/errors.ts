import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { partOf, toErrorItems } from './validation.js';

/** One problem with a request: where (`loc`), what (`msg`) and a machine code (`type`). */
export interface ErrorItem {
  loc: string;
  msg: string;
  type: string;
  order_id?: string;
  [detail: string]: unknown;
}

export interface ErrorEnvelope {
  message: string;
  errors: ErrorItem[] | null;
  request_id: string;
}

/** An error a handler throws on purpose; it reaches the caller as it is. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly errors: ErrorItem[] | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function invalidRequestMessage(errors: readonly ErrorItem[]): string {
  return `Invalid request: ${errors.length} problem${errors.length === 1 ? '' : 's'} found`;
}

/** The error for a request that breaks rules a schema cannot express. */
export function invalidRequest(errors: ErrorItem[], status: 400 | 422 = 400): ApiError {
  return new ApiError(status, invalidRequestMessage(errors), errors);
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
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => 'Content-Type must be application/json',
  FST_ERR_CTP_EMPTY_JSON_BODY: () => 'Request body is empty; send a JSON document',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => 'Content-Length does not match the body sent',
};

function isDataException(error: unknown): boolean {
  // SQLSTATE class 22: a value the database cannot hold (out of range, bad encoding, ...).
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('22') && code.length === 5;
}

export function sendError(reply: FastifyReply, status: number, message: string, errors: ErrorItem[] | null = null) {
  const body: ErrorEnvelope = { message, errors, request_id: reply.request.id };
  return reply.code(status).type('application/json').send(body);
}

/** Gives every error, and every unknown route, the one envelope of the API. */
export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) {
      reply.headers(error.headers);
      return sendError(reply, error.statusCode, error.message, error.errors);
    }
    if (error.validation) {
      const part = partOf(error.validationContext);
      const data = part === 'body' ? request.body : part === 'query' ? request.query : request.params;
      const errors = toErrorItems(error.validation as never, part, data);
      const status = request.routeOptions.config.validationStatus ?? 400;
      return sendError(reply, status, invalidRequestMessage(errors), errors);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const message = FRAMEWORK_MESSAGES[error.code]?.(error, request) ?? error.message;
      return sendError(reply, status, message);
    }
    if (isDataException(error)) {
      request.log.warn({ code: (error as { code?: string }).code }, 'value rejected by the database');
      return sendError(reply, request.routeOptions.config.validationStatus ?? 400, 'A value in the request cannot be stored');
    }
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, 500, 'Internal server error');
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, 404, `No route ${request.method} ${request.url.split('?')[0]}`));
}
