/**
 * The API reference (/openapi.json, shown at /docs): every operation in one group (tag) of the
 * declared list, and an example request and answer for each, that are right. Each example is
 * checked against the schema the document gives it (JSON Schema 2020-12, with the service's own
 * formats and x- keywords), and the example requests are sent, in order, to a service that must
 * accept them: an example its schema or the service refuses fails here.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { AnySchemaObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { addVocabulary } from '../src/http/validation.js';
import { ADMIN_TOKEN, closedSchema, startService, type TestApp, type TestClient, type TestService } from './helpers.js';

// ajv-formats is CommonJS; its type declarations describe the ESM default export one level down.
const addFormats = addFormatsPlugin as unknown as typeof addFormatsPlugin.default;

/** The groups, in the order /docs shows them. */
const GROUPS = ['Orders', 'Spend', 'Touchpoints', 'Attribution', 'Exports', 'Reports', 'Exchange rates', 'Collector', 'Admin'];

/** The group of each path: the first that matches. */
const GROUP_OF_PATH: [RegExp, string][] = [
  [/^\/v2\/orders\/\{order_id\}\/attribution$|^\/v1\/attribution\//, 'Attribution'],
  [/^\/v2\/orders(\/aliases)?$|^\/v1\/orders$|^\/v1\/customers\/erase$/, 'Orders'],
  [/^\/v1\/spend(_hourly)?$/, 'Spend'],
  [/^\/v1\/touchpoints$|^\/v1\/identities$/, 'Touchpoints'],
  [/^\/v1\/exports\//, 'Exports'],
  [/^\/v1\/reports\/performance$|^\/v1\/health\/feeds$|^\/v1\/client$/, 'Reports'],
  [/^\/v1\/exchange-rates$/, 'Exchange rates'],
  [/^\/v1\/collect$|^\/v1\/events\/segment$/, 'Collector'],
  [/^\/admin\/v1\//, 'Admin'],
];

/** Routes whose schema hides them from the document. */
const HIDDEN_PATHS = ['/', '/docs', '/openapi.json', '/healthz', '/readyz', '/pixel.js', '/v1/exports/files/{export_id}/{file}'];

interface Media {
  schema: AnySchemaObject;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Parameter {
  name: string;
  in: 'query' | 'path';
  required?: boolean;
  schema: AnySchemaObject;
  example?: unknown;
}
interface Operation {
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
}
interface Document {
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
}

/** Each operation of the document, as `GET /v2/orders`. */
const operationsOf = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, method, path, operation })),
  );

const examplesOf = (media: Media): unknown[] => (media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map(({ value }) => value));

/** Its one success status, and the media of its answer (none for a 204). */
function success(operation: Operation): { status: number; media: Media | undefined } {
  const statuses = Object.keys(operation.responses).filter((status) => status.startsWith('2'));
  assert.equal(statuses.length, 1, `one success status: ${statuses.join(', ')}`);
  return { status: Number(statuses[0]), media: operation.responses[statuses[0]!]!.content?.['application/json'] };
}

const ajv = addVocabulary(new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true }));
addFormats(ajv, ['uri']);

/** Problems of `example` under `schema`, or an empty list. */
function problems(schema: unknown, example: unknown): string[] {
  const validate = ajv.compile(schema as AnySchemaObject);
  return validate(example) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message}`);
}

let service: TestService;
let production: Document;
let uat: Document;

before(async () => {
  service = await startService();
  production = (await service.production.inject({ method: 'GET', url: '/openapi.json' })).json();
  uat = (await service.uat.inject({ method: 'GET', url: '/openapi.json' })).json();
});
after(() => service.close());

test('the groups are declared in the order /docs shows them, each with a one-sentence description', () => {
  assert.deepEqual(production.tags?.map((tag) => tag.name), GROUPS);
  for (const tag of production.tags!) assert.match(tag.description ?? '', /^[A-Z][^\n]{20,200}\.$/, tag.name);
  // The UAT port has no admin API.
  assert.deepEqual(uat.tags?.map((tag) => tag.name), GROUPS.filter((group) => group !== 'Admin'));
});

test('every operation is in exactly one group, the one of its path; hidden routes stay hidden', () => {
  for (const document of [production, uat]) {
    const wrong = operationsOf(document)
      .filter(({ path, operation }) => operation.tags?.length !== 1 || operation.tags[0] !== GROUP_OF_PATH.find(([pattern]) => pattern.test(path))?.[1])
      .map(({ name, operation }) => `${name}: ${JSON.stringify(operation.tags)}`);
    assert.deepEqual(wrong, []);
    for (const path of HIDDEN_PATHS) assert.equal(document.paths[path], undefined, path);
    assert.deepEqual(operationsOf(document).filter(({ method }) => !['get', 'post', 'patch', 'delete'].includes(method)).map(({ name }) => name), []);
  }
  const counts = Object.fromEntries(GROUPS.map((group) => [group, operationsOf(production).filter(({ operation }) => operation.tags?.[0] === group).length]));
  assert.ok(Object.values(counts).every((count) => count > 0), JSON.stringify(counts));
});

test('every request body has an example, valid under the schema of its body', () => {
  const wrong: string[] = [];
  for (const { name, operation } of operationsOf(production)) {
    for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
      const examples = examplesOf(media);
      if (examples.length === 0) wrong.push(`${name} (${type}): no example`);
      for (const example of examples) wrong.push(...problems(media.schema, example).map((problem) => `${name} (${type}): ${problem}`));
    }
  }
  assert.deepEqual(wrong, []);
});

test('every success answer with a body has an example, valid under its schema, naming no field the schema does not', () => {
  const wrong: string[] = [];
  for (const { name, operation } of operationsOf(production)) {
    const { status, media } = success(operation);
    if (!media) {
      assert.equal(status, 204, `${name}: an answer of ${status} with no body`);
      continue;
    }
    const examples = examplesOf(media);
    if (examples.length === 0) wrong.push(`${name} ${status}: no example`);
    for (const example of examples) wrong.push(...problems(closedSchema(media.schema), example).map((problem) => `${name} ${status}: ${problem}`));
  }
  assert.deepEqual(wrong, []);
});

test('every parameter an operation requires has an example, and every example of a parameter is valid under its schema', () => {
  const wrong: string[] = [];
  for (const { name, operation } of operationsOf(production)) {
    const parameters = operation.parameters ?? [];
    if (parameters.length > 0 && parameters.every((parameter) => parameter.example === undefined)) wrong.push(`${name}: no parameter has an example`);
    for (const parameter of parameters) {
      const where = `${name} ${parameter.in} ${parameter.name}`;
      if (parameter.example === undefined) {
        if (parameter.required) wrong.push(`${where}: required, and no example`);
        continue;
      }
      wrong.push(...problems(parameter.schema, parameter.example).map((problem) => `${where}: ${problem}`));
    }
  }
  assert.deepEqual(wrong, []);
});

/** A request of the run below: the operation, and how it is sent. */
interface Step {
  operation: string;
  /** Path parameters taken from earlier answers (ids the service made) instead of their examples. */
  kept?: string[];
  /** What of its answer later steps take: a path parameter's name, and the field of the answer holding it. */
  keep?: Record<string, string>;
}

/**
 * Every operation, in an order in which each example request finds what it needs: the orders
 * before their aliases, patch and explanation; spend before its deletion; touchpoints and
 * identities before the explanation; an export before its result; a client before its keys.
 */
const STEPS: Step[] = [
  { operation: 'POST /v2/orders' },
  { operation: 'POST /v1/orders' },
  { operation: 'PATCH /v2/orders' },
  { operation: 'POST /v2/orders/aliases' },
  { operation: 'GET /v2/orders' },
  { operation: 'POST /v1/spend_hourly' },
  { operation: 'GET /v1/spend_hourly' },
  { operation: 'POST /v1/spend' },
  { operation: 'GET /v1/spend' },
  { operation: 'POST /v1/touchpoints' },
  { operation: 'POST /v1/identities' },
  { operation: 'GET /v1/touchpoints' },
  { operation: 'POST /v1/events/segment' },
  { operation: 'POST /v1/collect' },
  { operation: 'GET /v2/orders/{order_id}/attribution' },
  { operation: 'GET /v1/attribution/models' },
  { operation: 'GET /v1/attribution/models/{model_id}' },
  { operation: 'GET /v1/exports/metrics' },
  { operation: 'GET /v1/exports/breakdowns' },
  { operation: 'GET /v1/exports/attribution-models' },
  { operation: 'POST /v1/exports/data-export', keep: { export_id: 'id' } },
  { operation: 'GET /v1/exports/data-export/result/{export_id}', kept: ['export_id'] },
  { operation: 'GET /v1/reports/performance' },
  { operation: 'GET /v1/health/feeds' },
  { operation: 'GET /v1/client' },
  { operation: 'POST /v1/exchange-rates' },
  { operation: 'GET /v1/exchange-rates' },
  { operation: 'POST /v1/customers/erase' },
  { operation: 'DELETE /v1/spend_hourly' },
  { operation: 'DELETE /v1/spend' },
  { operation: 'POST /admin/v1/clients', keep: { client_id: 'client_id' } },
  { operation: 'PATCH /admin/v1/clients/{client_id}', kept: ['client_id'] },
  { operation: 'GET /admin/v1/clients/{client_id}', kept: ['client_id'] },
  { operation: 'POST /admin/v1/clients/{client_id}/api-keys', kept: ['client_id'], keep: { key_id: 'key_id' } },
  { operation: 'DELETE /admin/v1/clients/{client_id}/api-keys/{key_id}', kept: ['client_id', 'key_id'] },
  { operation: 'DELETE /admin/v1/clients/{client_id}', kept: ['client_id'] },
];

test('the run below sends every operation of the document once', () => {
  assert.deepEqual(STEPS.map((step) => step.operation).sort(), operationsOf(production).map(({ name }) => name).sort());
});

test('the example requests are accepted by the service, in order, with the success status the document gives', async () => {
  const client: TestClient = await service.createClient('Acme');
  const app: TestApp = service.production;
  const kept: Record<string, string> = {};
  for (const step of STEPS) {
    const [method, path] = step.operation.split(' ') as [string, string];
    const operation = production.paths[path]![method.toLowerCase()]!;
    const parameters = operation.parameters ?? [];
    const value = (parameter: Parameter) => (step.kept?.includes(parameter.name) ? kept[parameter.name] : parameter.example);
    const url = path.replace(/\{(\w+)\}/g, (_match, name: string) => {
      const given = value(parameters.find((parameter) => parameter.in === 'path' && parameter.name === name)!);
      assert.ok(given !== undefined, `${step.operation}: no value for ${name}`);
      return encodeURIComponent(String(given));
    });
    const query = Object.fromEntries(
      parameters.filter((parameter) => parameter.in === 'query' && parameter.example !== undefined).map((parameter) => [parameter.name, String(parameter.example)]),
    );
    const payloads = operation.requestBody ? examplesOf(operation.requestBody.content['application/json']!) : [undefined];
    assert.ok(payloads.length > 0, `${step.operation}: no example body`);
    const headers = path.startsWith('/admin/') ? { authorization: `Bearer ${ADMIN_TOKEN}` } : path === '/v1/collect' ? {} : client.headers;
    for (const payload of payloads) {
      const response = await app.inject({ method: method as 'GET', url, query, headers, ...(payload !== undefined && { payload: payload as object }) });
      const described = `${step.operation}${Object.keys(query).length > 0 ? `?${new URLSearchParams(query)}` : ''} ${JSON.stringify(payload) ?? ''}`;
      assert.equal(response.statusCode, success(operation).status, `${described}\n${response.body}`);
      for (const [name, field] of Object.entries(step.keep ?? {})) kept[name] = response.json()[field];
    }
  }
});
