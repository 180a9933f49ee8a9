import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyPluginAsync } from 'fastify';

/**
 * The pages' own Content-Security-Policy: their scripts, styles, fonts and images from this
 * origin only, requests to this origin only, nothing inline, no frames. The API keeps helmet's
 * `default-src 'none'`. Images may be data: URIs, which the reference's stylesheet uses for icons.
 */
export const PAGES_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const resolve = createRequire(import.meta.url).resolve;
const packageFile = (name: string, file: string) => path.join(path.dirname(resolve(`${name}/package.json`)), file);
// The same path from src/pages/ and from dist/pages/: tsc does not copy these files into dist.
const ownFile = (file: string) => new URL(`../../src/pages/${file}`, import.meta.url);

const TYPES = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' } as const;
/** What each page path serves: its file, read once at start. Vendor files come from the installed packages, never a CDN. */
const FILES: Record<string, URL | string> = {
  '/': ownFile('dashboard.html'),
  '/docs': ownFile('docs.html'),
  '/pages/dashboard.js': ownFile('dashboard.js'),
  '/pages/dashboard.css': ownFile('dashboard.css'),
  '/pages/docs.js': ownFile('docs.js'),
  '/pages/docs.css': ownFile('docs.css'),
  '/pages/icon.svg': ownFile('icon.svg'),
  '/pages/vendor/uPlot.iife.min.js': packageFile('uplot', 'dist/uPlot.iife.min.js'),
  '/pages/vendor/uPlot.min.css': packageFile('uplot', 'dist/uPlot.min.css'),
  '/pages/vendor/swagger-ui-bundle.js': packageFile('swagger-ui-dist', 'swagger-ui-bundle.js'),
  '/pages/vendor/swagger-ui.css': packageFile('swagger-ui-dist', 'swagger-ui.css'),
};

/** The dashboard (GET /) and the API reference (GET /docs), with their scripts and styles; no credentials. */
export const pageRoutes: FastifyPluginAsync = async (app) => {
  for (const [url, file] of Object.entries(FILES)) {
    // Vendor bundles end with a link to their source map, which is not served.
    const text = readFileSync(file, 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n').replace(/\/\*# sourceMappingURL=\S+?\s*\*\/\s*$/, '');
    const type = TYPES[(url === '/' || url === '/docs' ? 'html' : path.extname(url).slice(1)) as keyof typeof TYPES];
    app.get(url, { schema: { hide: true } }, async (_request, reply) => reply.header('content-security-policy', PAGES_CSP).type(type).send(text));
  }
};
