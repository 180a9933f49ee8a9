import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';

// The same path from src/pixel/ and from dist/pixel/: tsc does not copy the script into dist.
const SOURCE = new URL('../../src/pixel/pixel.js', import.meta.url);

/**
 * Shops paste the script's URL once and never change it, so a new version has to reach browsers
 * without a new URL: an hour fresh, then revalidated with the ETag (a 304 of a few bytes), and
 * used stale for up to a day while that happens in the background, so that no page waits for it.
 */
export const PIXEL_CACHE_CONTROL = 'public, max-age=3600, stale-while-revalidate=86400';

export interface PixelScript {
  text: string;
  gzipped: Buffer;
  /** Strong, from the content: one per representation, as the two encodings are different bytes. */
  etag: string;
  gzipEtag: string;
}

/**
 * The script as served: its source without comment lines and indentation, which are a quarter
 * of its gzipped size. (The source keeps every comment at the start of its own line for this.)
 */
export function loadPixelScript(): PixelScript {
  const text = readFileSync(SOURCE, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^(\/\/|\/\*\*|\*)/.test(line))
    .join('\n');
  const hash = createHash('sha256').update(text).digest('base64url').slice(0, 27);
  return { text, gzipped: gzipSync(text, { level: 9 }), etag: `"${hash}"`, gzipEtag: `"${hash}-gzip"` };
}

/** Whether Accept-Encoding takes gzip: named (or `*`) without `q=0`. */
function acceptsGzip(request: FastifyRequest): boolean {
  return String(request.headers['accept-encoding'] ?? '')
    .split(',')
    .some((entry) => {
      const [coding, ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase());
      const zeroQuality = parameters.some((parameter) => /^q=0(\.0*)?$/.test(parameter));
      return (coding === 'gzip' || coding === '*') && !zeroQuality;
    });
}

/** If-None-Match compares weakly (RFC 9110 13.1.2): `W/"x"` matches `"x"`. */
function matches(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined) return false;
  return header.trim() === '*' || header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** `GET /pixel.js`: the browser script of docs/api.md, "The pixel", on both ports, no credentials. */
export const pixelRoutes: FastifyPluginAsync = async (app) => {
  const script = loadPixelScript();
  app.get('/pixel.js', { schema: { hide: true } }, async (request, reply) => {
    const gzip = acceptsGzip(request);
    const etag = gzip ? script.gzipEtag : script.etag;
    reply
      .header('cache-control', PIXEL_CACHE_CONTROL)
      .header('etag', etag)
      .header('vary', 'Accept-Encoding')
      // Helmet's same-origin policy would keep shops' pages, on other sites, from running it.
      .header('cross-origin-resource-policy', 'cross-origin');
    if (matches(request, etag)) return reply.code(304).send();
    reply.type('text/javascript; charset=utf-8');
    if (!gzip) return script.text;
    return reply.header('content-encoding', 'gzip').send(script.gzipped);
  });
};
