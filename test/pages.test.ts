import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { PAGES_CSP } from '../src/pages/routes.js';
import { createAjv } from '../src/http/validation.js';
import { startService } from './helpers.js';

/* The pages (GET / and GET /docs) and their files: served on both ports, no CDN, their own CSP. */

const service = await startService();
after(() => service.close());

const PAGES: [string, RegExp][] = [
  ['/', /^text\/html/],
  ['/docs', /^text\/html/],
  ['/pages/dashboard.js', /^text\/javascript/],
  ['/pages/dashboard.css', /^text\/css/],
  ['/pages/docs.js', /^text\/javascript/],
  ['/pages/vendor/uPlot.iife.min.js', /^text\/javascript/],
  ['/pages/vendor/swagger-ui-bundle.js', /^text\/javascript/],
  ['/pages/vendor/swagger-ui.css', /^text\/css/],
  ['/pages/icon.svg', /^image\/svg\+xml/],
];

test('the pages and their files are served on both ports with the pages policy, and load nothing from elsewhere', async () => {
  for (const app of [service.production, service.uat]) {
    for (const [url, type] of PAGES) {
      const response = await app.inject({ method: 'GET', url });
      assert.equal(response.statusCode, 200, url);
      assert.match(String(response.headers['content-type']), type, url);
      assert.equal(response.headers['content-security-policy'], PAGES_CSP, url);
      assert.ok(!/sourceMappingURL=/.test(response.body.slice(-300)), `${url} names no source map`);
    }
    for (const page of ['/', '/docs']) {
      const html = (await app.inject({ method: 'GET', url: page })).body;
      const references = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
      assert.ok(references.length > 0);
      for (const reference of references) assert.match(reference, /^\/(?!\/)/, `${page} refers to ${reference}: only this origin`);
    }
  }
  assert.doesNotMatch(PAGES_CSP, /unsafe|\*|http/);
});

test("the API's own policy stays default-src 'none'", async () => {
  for (const url of ['/openapi.json', '/v1/reports/performance', '/healthz']) {
    const response = await service.production.inject({ method: 'GET', url });
    assert.match(String(response.headers['content-security-policy']), /^default-src 'none'/, url);
  }
});

interface Operation {
  description?: string;
  requestBody?: { content: Record<string, { schema: { examples?: unknown[]; items?: { examples?: unknown[] } } }> };
}

test('every operation of /openapi.json has a description and an example; the examples of bodies are valid bodies', async () => {
  const { paths } = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, Operation>> };
  const ajv = createAjv({ coerceTypes: false, allErrors: true });
  const missing: string[] = [];
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const name = `${method.toUpperCase()} ${path}`;
      // The pixel's collector is documented by src/collect, outside this change.
      if (path === '/v1/collect') continue;
      if (!(operation.description && operation.description.length > 20)) missing.push(`${name}: description`);
      if (!/"examples?"/.test(JSON.stringify(operation))) missing.push(`${name}: example`);
      const schema = operation.requestBody?.content['application/json']?.schema;
      if (!schema) continue;
      for (const [examples, of] of [[schema.examples, schema], [schema.items?.examples, schema.items]] as const) {
        for (const example of examples ?? []) {
          const validate = ajv.compile(of as object);
          assert.ok(validate(example), `${name}: ${JSON.stringify(validate.errors)}`);
        }
      }
    }
  }
  assert.deepEqual(missing, []);
});
