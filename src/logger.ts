import pino, { type Logger } from 'pino';
import { sqlstateOf } from './db/errors.js';

/**
 * PostgreSQL's message and detail may quote the values of a row (an order's e-mail address, say),
 * so database errors are logged by code, table and constraint only, with their stack.
 */
export function errorForLog(error: unknown): object {
  if (!(error instanceof Error)) return { type: typeof error };
  const code = sqlstateOf(error);
  if (code) {
    const { table, constraint, routine } = error as Error & Record<string, unknown>;
    return { type: error.name, code, table, constraint, routine, stack: error.stack?.split('\n').slice(1).join('\n') };
  }
  return pino.stdSerializers.err(error);
}

/**
 * Structured JSON logs. Requests are logged by method, route and status only: no headers, no
 * bodies, no client addresses, so no API key and no personal data reaches a log line. The
 * redaction paths are a second guard for anything logged by mistake.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      serializers: { err: errorForLog },
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'api_key',
          '*.api_key',
          ...['customer_email', 'customer_phone_number', 'customer_name', 'customer_ip_address', 'customer_shipping_address'].flatMap(
            (field) => [field, `*.${field}`],
          ),
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
