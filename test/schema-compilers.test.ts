/**
 * Schemas are compiled when a first request needs them, once for the production and UAT apps
 * (src/http/schema-compilers.ts): start-up compiles none, and the second app reuses what the
 * first compiled. Ajv's compile is watched; the validators still answer as before on both ports.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Ajv, type AnySchemaObject } from 'ajv';
import { assertErrorEnvelope, startService } from './helpers.js';

const compiled: AnySchemaObject[] = [];
const compile = Ajv.prototype.compile;
Ajv.prototype.compile = function watched(this: Ajv, schema: AnySchemaObject, meta?: boolean) {
  compiled.push(schema);
  return compile.call(this, schema, meta);
} as typeof compile;
after(() => {
  Ajv.prototype.compile = compile;
});

const service = await startService();
after(() => service.close());

const touchpoints = (id: string) => ({ data: [{ touchpoint_id: id, occurred_at: '2026-03-08T08:15:30Z', visitor_id: 'visitor-1' }] });

test('start-up compiles no schema; a first request compiles its own, once for both apps', async () => {
  assert.equal(compiled.length, 0, 'no schema compiled by start-up');
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

test('answers with a response schema are serialized alike on both ports', async () => {
  const client = await service.createClient();
  const [production, uat] = await Promise.all(
    [service.production, service.uat].map((app) => app.inject({ method: 'GET', url: '/v1/exports/attribution-models', headers: client.headers })),
  );
  assert.equal(production!.statusCode, 200);
  assert.equal(uat!.body, production!.body);
  assert.ok((production!.json() as { attribution_models: { id: string }[] }).attribution_models.some((model) => model.id === 'linear'));
});
