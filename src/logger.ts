import pino, { type Logger } from 'pino';

/**
 * Structured JSON logs. Requests are logged by method, route and status only: no headers, no
 * bodies, no client addresses, so no API key and no personal data reaches a log line. The
 * redaction paths are a second guard for anything logged by mistake.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization',
        'headers.authorization',
        'api_key',
        '*.api_key',
        'customer_email',
        'customer_phone_number',
        'customer_name',
        'customer_ip_address',
        'customer_shipping_address',
        '*.customer_email',
        '*.customer_phone_number',
        '*.customer_name',
        '*.customer_ip_address',
        '*.customer_shipping_address',
      ],
      censor: '[redacted]',
    },
  });
}
