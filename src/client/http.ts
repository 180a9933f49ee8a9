/**
 * The client's transport: one request with retries. Only `fetch`, timers and `crypto.randomUUID`
 * (globals of Node 20 and browsers), so that the client runs in both.
 */

/** An item of an error answer's `errors`: where, what, and a machine code. */
export interface TributaryErrorItem {
  loc: string;
  msg: string;
  type: string;
  order_id?: string;
  [detail: string]: unknown;
}

/**
 * Every failure of a call: an error answer (its status, `message`, `errors` and `request_id`),
 * or no answer at all (`status` 0: the connection failed, or an export ended in ERROR).
 */
export class TributaryError extends Error {
  override name = 'TributaryError';
  constructor(
    readonly status: number,
    message: string,
    readonly errors: TributaryErrorItem[] | null = null,
    readonly request_id: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface RetryOptions {
  /** Attempts after the first one (default 5). */
  retries?: number;
  /** First backoff, doubled at each attempt, with full jitter (default 250 ms). */
  baseDelayMs?: number;
  /** Longest wait between attempts (default 30 s); a longer Retry-After is still honoured. */
  maxDelayMs?: number;
}

export interface TransportOptions extends RetryOptions {
  url: string;
  headers: Record<string, string>;
  fetch?: typeof fetch;
}

/**
 * An item already encoded as JSON (a line of a file, say), as text or as its UTF-8 bytes, sent as
 * it is: nothing is parsed and encoded again. It is not checked here; the API refuses what is not JSON.
 */
export class EncodedJson<T> {
  declare readonly item?: T;
  constructor(readonly json: string | Uint8Array) {}
}

const utf8 = new TextEncoder();

/**
 * A JSON array of items between `before` and `after`, as the UTF-8 bytes of the request's body,
 * those already encoded copied as they are. Bytes, not a string: a batch of a thousand orders
 * would be a megabyte string in the JavaScript heap, joined then flattened and copied again
 * when sent, and the heap's old generation grows by each of them until the next full collection.
 */
export function encodeList(items: readonly unknown[], before = '', after = ''): Uint8Array {
  const separator = utf8.encode(',');
  const parts: Uint8Array[] = [utf8.encode(`${before}[`)];
  items.forEach((item, index) => {
    if (index > 0) parts.push(separator);
    const json = item instanceof EncodedJson ? item.json : JSON.stringify(item);
    parts.push(typeof json === 'string' ? utf8.encode(json) : json);
  });
  parts.push(utf8.encode(`]${after}`));
  const body = new Uint8Array(parts.reduce((length, part) => length + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    body.set(part, offset);
    offset += part.length;
  }
  return body;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** The body as JSON already, text or UTF-8 bytes (instead of `body`). */
  json?: string | Uint8Array;
  /** Whether the request may be sent again after a connection failed mid-way (every upsert may). */
  idempotent: boolean;
  signal?: AbortSignal;
}

/** Statuses that say the request was refused before it did anything, and to come back later. */
const RETRIED_STATUSES = new Set([429, 503]);

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Seconds (or an HTTP date) of a Retry-After header, in milliseconds. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

async function errorOf(response: Response): Promise<TributaryError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { message?: string; errors?: TributaryErrorItem[] | null; request_id?: string };
    return new TributaryError(response.status, body.message ?? response.statusText, body.errors ?? null, body.request_id ?? response.headers.get('x-request-id'));
  } catch {
    return new TributaryError(response.status, text.slice(0, 500) || response.statusText, null, response.headers.get('x-request-id'));
  }
}

export interface Transport {
  /** The answer's JSON; a TributaryError for any other status than 2xx. */
  json<T>(method: string, path: string, options: RequestOptions): Promise<T>;
  /** The raw answer (for downloads), once it is a 2xx. */
  response(method: string, url: string, options: RequestOptions & { authenticated: boolean }): Promise<Response>;
}

export function createTransport({ url, headers, fetch: fetchImpl = globalThis.fetch, retries = 5, baseDelayMs = 250, maxDelayMs = 30_000 }: TransportOptions): Transport {
  const base = url.replace(/\/+$/, '');
  const backoff = (attempt: number) => Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);

  /**
   * Sends a request until its answer has arrived as far as `read` takes it (a 2xx's body, for
   * JSON), so that a connection lost before the answer or during its body is one failure,
   * retried alike.
   */
  async function send<T>(
    method: string,
    target: string,
    { query, body, json, idempotent, signal, authenticated }: RequestOptions & { authenticated: boolean },
    read: (response: Response) => Promise<T>,
  ): Promise<T> {
    const address = new URL(target.startsWith('http') ? target : `${base}${target}`);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) address.searchParams.set(name, String(value));
    // One id for every attempt, so that the server's log shows them as one request sent again.
    const requestHeaders: Record<string, string> = { 'x-request-id': globalThis.crypto.randomUUID(), ...(authenticated ? headers : {}) };
    const payload = json ?? (body === undefined ? undefined : JSON.stringify(body));
    if (payload !== undefined) requestHeaders['content-type'] = 'application/json';
    for (let attempt = 0; ; attempt++) {
      let answer: { value: T } | { refusal: TributaryError; retryAfter: string | null };
      try {
        const response = await fetchImpl(address, { method, headers: requestHeaders, body: payload, signal });
        // A refusal's body is read to the end too, so that the connection can serve the next attempt.
        answer = response.ok ? { value: await read(response) } : { refusal: await errorOf(response), retryAfter: response.headers.get('retry-after') };
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (!idempotent || attempt >= retries) {
          throw new TributaryError(0, `${method} ${address.pathname} failed: ${(error as Error).message}`, null, null, { cause: error });
        }
        await sleep(backoff(attempt), signal);
        continue;
      }
      if ('value' in answer) return answer.value;
      if (!RETRIED_STATUSES.has(answer.refusal.status) || attempt >= retries) throw answer.refusal;
      const told = retryAfterMs(answer.retryAfter);
      await sleep(told === undefined ? backoff(attempt) : told + Math.random() * baseDelayMs, signal);
    }
  }

  return {
    async json<T>(method: string, path: string, options: RequestOptions): Promise<T> {
      return JSON.parse(await send(method, path, { ...options, authenticated: true }, (response) => response.text())) as T;
    },
    // The body is the caller's to read: a download is a stream, not held here to be retried.
    response: (method, url, options) => send(method, url, options, async (response) => response),
  };
}
