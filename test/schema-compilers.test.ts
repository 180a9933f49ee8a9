/**
 * Schemas are compiled when a first request needs them, once for the production and UAT apps
 * (src/http/schema-compilers.ts): start-up compiles none, and the second app reuses what the
 * first compiled. Ajv's compile and fast-json-stringify's are watched; the validators still
 * answer as before on both ports. Then every route's schemas are compiled, as start-up did.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, test } from 'node:test';
import { Ajv, type AnySchemaObject } from 'ajv';

const compiled: AnySchemaObject[] = [];
const compile = Ajv.prototype.compile;
Ajv.prototype.compile = function watched(this: Ajv, schema: AnySchemaObject, meta?: boolean) {
  compiled.push(schema);
  return compile.call(this, schema, meta);
} as typeof compile;
after(() => {
  Ajv.prototype.compile = compile;
});

// fast-json-stringify is watched where Fastify's serializer compiler requires it: before the app is imported.
const require = createRequire(import.meta.url);
const stringifyPath = require.resolve('fast-json-stringify', { paths: [require.resolve('@fastify/fast-json-stringify-compiler')] });
require(stringifyPath);
const stringifyModule = require.cache[stringifyPath]!;
const build = stringifyModule.exports as (schema: object, options?: object) => unknown;
const serializersBuilt: object[] = [];
stringifyModule.exports = Object.assign((schema: object, options?: object) => {
  serializersBuilt.push(schema);
  return build(schema, options);
}, build);
after(() => {
  stringifyModule.exports = build;
});

const { assertErrorEnvelope, startService } = await import('./helpers.js');
const { compileWaitingSchemas } = await import('../src/http/schema-compilers.js');

const service = await startService();
after(() => service.close());
// Start-up proper: Fastify compiles routes' schemas when an app gets ready, not when it is built.
await Promise.all([service.production.ready(), service.uat.ready()]);

const touchpoints = (id: string) => ({ data: [{ touchpoint_id: id, occurred_at: '2026-03-08T08:15:30Z', visitor_id: 'visitor-1' }] });

test('start-up compiles no schema; a first request compiles its own, once for both apps', async () => {
  assert.equal(compiled.length, 0, 'no validator compiled by start-up');
  assert.equal(serializersBuilt.length, 0, 'no serializer compiled by start-up');
  const client = await service.createClient();
  const post = (app: typeof service.production, body: object) =>
    app.inject({ method: 'POST', url: '/v1/touchpoints', headers: client.headers, payload: body });

  const beforeTouchpoints = compiled.length;
  assert.equal((await post(service.production, touchpoints('first'))).statusCode, 201);
  const byFirstRequest = compiled.length;
  assert.ok(byFirstRequest > beforeTouchpoints, 'the first request compiled its validators');
  assert.equal((await post(service.uat, touchpoints('first'))).statusCode, 201);
  assert.equal((await post(service.production, touchpoints('second'))).statusCode, 201);
  assert.equal(compiled.length, byFirstRequest, 'the other app and later requests reuse them');

  // An invalid body is checked for every problem by validators of their own, compiled once too.
  const invalid = { data: [{ touchpoint_id: '', occurred_at: 'yesterday' }] };
  for (const app of [service.production, service.uat]) {
    const envelope = assertErrorEnvelope(await post(app, invalid), 422);
    assert.deepEqual(envelope.errors!.map((error) => error.loc).sort(), ['body/data/0/occurred_at', 'body/data/0/touchpoint_id', 'body/data/0/visitor_id']);
  }
  const byInvalidRequests = compiled.length;
  assert.ok(byInvalidRequests > byFirstRequest);
  await post(service.uat, invalid);
  assert.equal(compiled.length, byInvalidRequests);
});

test('answers with a response schema are serialized alike on both ports, by a serializer compiled once', async () => {
  const client = await service.createClient();
  const get = (app: typeof service.production) => app.inject({ method: 'GET', url: '/v1/exports/attribution-models', headers: client.headers });
  const beforeAnswer = serializersBuilt.length;
  const production = await get(service.production);
  assert.equal(production.statusCode, 200);
  assert.ok((production.json() as { attribution_models: { id: string }[] }).attribution_models.some((model) => model.id === 'linear'));
  const byFirstAnswer = serializersBuilt.length;
  assert.ok(byFirstAnswer > beforeAnswer, 'the first answer compiled its serializer');
  assert.equal((await get(service.uat)).body, production.body);
  assert.equal((await get(service.production)).body, production.body);
  assert.equal(serializersBuilt.length, byFirstAnswer, 'the other app and later answers reuse it');
});

test("every route's schemas compile, as they did at start-up: one Ajv or fast-json-stringify refuses fails here", () => {
  const validators = compiled.length;
  const serializers = serializersBuilt.length;
  assert.ok(compileWaitingSchemas() > 0);
  assert.ok(compiled.length > validators, 'validators no request needed');
  assert.ok(serializersBuilt.length > serializers, 'serializers no request needed');
  assert.equal(compileWaitingSchemas(), 0, 'each compiled once');
});
