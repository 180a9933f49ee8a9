import net from 'node:net';
import { Ajv, type AnySchemaObject, type ErrorObject, type KeywordDefinition, type SchemaObject } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { isDate, isDateTime, isWholeHour } from '../date-time.js';
import type { ErrorItem } from './error-envelope.js';

/**
 * Schema keywords of our own. They keep every rule of a resource inside its one schema, so the
 * OpenAPI document shows them (as `x-` extensions) and one compiled validator reports them all.
 *
 * - `x-messages`: `{ <keyword>: <message> }`, the message to report when that keyword of this
 *   schema fails (the specification's own wording, where it gives one); or
 *   `{ <keyword>: { msg, type } }` to report another error type code as well. Under `null`, the
 *   message for a null where the schema takes none, in place of the type's.
 * - `x-unique-by`: on an array of objects, the properties that together must not repeat.
 * - `x-exclusive`: on an object, pairs of properties that must not both be present (null is absent).
 * - `x-distinct`: on an object, two properties that must not hold the same value.
 * - `x-required-any`: on an object, properties of which at least one must be present.
 */
type Messages = Record<string, string | { msg: string; type: string }>;

// ajv-formats is CommonJS; its type declarations describe the ESM default export one level down.
const addFormats = addFormatsPlugin as unknown as typeof addFormatsPlugin.default;
/** An Ajv of any draft (its core class). */
type AnyAjv = Parameters<typeof addFormats>[0];

const MESSAGES = 'x-messages';

function customMessage(parentSchema: AnySchemaObject | undefined, keyword: string): { msg: string; type?: string } | undefined {
  const custom = (parentSchema?.[MESSAGES] as Messages | undefined)?.[keyword];
  return typeof custom === 'string' ? { msg: custom } : custom;
}

type Obj = Record<string, unknown>;
const isObject = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);

interface KeywordError {
  keyword: string;
  instancePath: string;
  message: string;
  params: Record<string, unknown>;
}

/** Builds a user keyword from a check that returns the errors it found. */
function keyword(
  name: string,
  dataType: 'array' | 'object',
  check: (schema: never, data: never, parentSchema: SchemaObject, instancePath: string) => KeywordError[],
): KeywordDefinition {
  const validate = (schema: unknown, data: unknown, parentSchema?: SchemaObject, cxt?: { instancePath: string }) => {
    const errors = check(schema as never, data as never, parentSchema ?? {}, cxt?.instancePath ?? '');
    validate.errors = errors;
    return errors.length === 0;
  };
  validate.errors = [] as KeywordError[];
  return { keyword: name, type: dataType, schemaType: 'array', errors: true, validate };
}

const uniqueBy = keyword('x-unique-by', 'array', (fields: string[], items: unknown[], parentSchema, path) => {
  const seen = new Set<string>();
  const errors: KeywordError[] = [];
  items.forEach((item, index) => {
    if (!isObject(item)) return;
    const key = JSON.stringify(fields.map((field) => item[field] ?? null));
    if (!seen.has(key)) return void seen.add(key);
    errors.push({
      keyword: 'x-unique-by',
      instancePath: `${path}/${index}/${fields[0]}`,
      message: customMessage(parentSchema, 'x-unique-by')?.msg ?? `Duplicate ${fields.join(' and ')}: each must appear once`,
      params: { fields },
    });
  });
  return errors;
});

const exclusive = keyword('x-exclusive', 'object', (pairs: [string, string][], data: Obj, _parent, path) =>
  pairs
    .filter(([a, b]) => data[a] != null && data[b] != null)
    .map(([a, b]) => ({
      keyword: 'x-exclusive',
      instancePath: `${path}/${b}`,
      message: `Must not be present together with ${a}`,
      params: { with: a },
    })),
);

const distinct = keyword('x-distinct', 'object', ([a, b]: [string, string], data: Obj, _parent, path) =>
  data[a] !== undefined && data[a] === data[b]
    ? [{ keyword: 'x-distinct', instancePath: `${path}/${b}`, message: `Must not be the same as ${a}`, params: { with: a } }]
    : [],
);

const requiredAny = keyword('x-required-any', 'object', (names: string[], data: Obj, parentSchema, path) =>
  names.some((name) => data[name] !== undefined)
    ? []
    : [{
        keyword: 'x-required-any',
        instancePath: `${path}/${names[0]}`,
        message: customMessage(parentSchema, 'x-required-any')?.msg ?? `Give at least one of ${names.join(', ')}`,
        params: { names },
      }],
);

/**
 * An e-mail address: one @, no spaces, a dotted domain. Internationalised addresses (RFC 6531,
 * such as müller@example.de) are real customers' addresses and are accepted.
 */
const EMAIL = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/u;
export const isEmail = (value: string) => value.length <= 254 && EMAIL.test(value);

export function createAjv(options: { coerceTypes: boolean; allErrors: boolean }): Ajv {
  const ajv = new Ajv({
    allErrors: options.allErrors,
    verbose: true,
    coerceTypes: options.coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: true,
    allowUnionTypes: true,
  });
  return addVocabulary(ajv);
}

/**
 * Our formats and keywords, on an Ajv of any draft: the service's (draft-07), or a test's reading
 * the OpenAPI document, whose schemas are JSON Schema 2020-12.
 */
export function addVocabulary<Validator extends AnyAjv>(ajv: Validator): Validator {
  addFormats(ajv, ['uuid']);
  ajv.addFormat('date', { type: 'string', validate: isDate });
  ajv.addFormat('email', { type: 'string', validate: isEmail });
  ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
  ajv.addFormat('whole-hour', { type: 'string', validate: isWholeHour });
  ajv.addFormat('date-or-date-time', { type: 'string', validate: (value: string) => isDate(value) || isDateTime(value) });
  // Empty is the shop not knowing it: the hosted API's WooCommerce plugin sends "" then.
  ajv.addFormat('ip-or-empty', { type: 'string', validate: (value: string) => value === '' || net.isIP(value) !== 0 });
  ajv.addKeyword({ keyword: MESSAGES, schemaType: 'object' });
  ajv.addKeyword(uniqueBy);
  ajv.addKeyword(exclusive);
  ajv.addKeyword(distinct);
  ajv.addKeyword(requiredAny);
  return ajv;
}

/** Where a validated value came from, as named in an error's `loc`. */
export type Part = 'body' | 'query' | 'path' | 'header';

const FASTIFY_PARTS: Record<string, Part> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** The part of a request that Fastify names `httpPart`. */
export function partOf(httpPart: string | undefined): Part {
  return FASTIFY_PARTS[httpPart ?? 'body'] ?? 'body';
}

const TYPES: Record<string, string> = {
  required: 'required',
  additionalProperties: 'additional_property',
  minLength: 'min_length',
  maxLength: 'max_length',
  minimum: 'minimum',
  maximum: 'maximum',
  exclusiveMinimum: 'minimum',
  exclusiveMaximum: 'maximum',
  minItems: 'min_items',
  maxItems: 'max_items',
  minProperties: 'min_properties',
  uniqueItems: 'unique',
  'x-unique-by': 'unique',
  'x-exclusive': 'exclusive',
  'x-distinct': 'distinct',
  'x-required-any': 'required',
  enum: 'enum',
  const: 'enum',
  format: 'format',
  type: 'type',
  pattern: 'pattern',
};

const FORMAT_MESSAGES: Record<string, string> = {
  'date-time':
    'Must be an ISO-8601 date-time with a time zone, such as 2024-03-08T01:23:45-08:00 or 2024-03-08T09:23:45Z (in a URL, write + as %2B)',
  'whole-hour':
    'Must be an ISO-8601 date-time with a time zone at exactly the start of an hour, such as 2024-03-08T01:00:00-08:00 or 2024-03-08T09:00:00Z',
  date: 'Must be a date written YYYY-MM-DD',
  'date-or-date-time': 'Must be a date written YYYY-MM-DD, or an ISO-8601 date-time with a time zone such as 2024-03-08T09:23:45Z',
  email: 'Must be a valid e-mail address',
  'ip-or-empty': 'Must be a valid IPv4 or IPv6 address',
  uuid: 'Must be a UUID',
};

const A_OR_AN: Record<string, string> = {
  string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean (true or false)',
  array: 'an array', object: 'an object', null: 'null',
};

function defaultMessage(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const limit = params.limit as number;
  switch (error.keyword) {
    case 'required':
      return 'Field required';
    case 'additionalProperties':
      return 'Property is not allowed here';
    case 'type':
      return `Must be ${String(params.type).split(',').map((type) => A_OR_AN[type] ?? type).join(' or ')}`;
    case 'minLength':
      return limit === 1 ? 'Must not be empty' : `Must be at least ${limit} characters long`;
    case 'maxLength':
      return `Must be at most ${limit} characters long`;
    case 'minimum':
      return `Must be at least ${limit}`;
    case 'maximum':
      return `Must be at most ${limit}`;
    case 'minItems':
      return `Must have at least ${limit} item${limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `Must have at most ${limit} items`;
    case 'minProperties':
      return `Must have at least ${limit} propert${limit === 1 ? 'y' : 'ies'}`;
    case 'uniqueItems': {
      // Ajv's two ways to compare items (by type, or any two) name the pair in opposite orders.
      const [first, second] = [params.i as number, params.j as number].sort((a, b) => a - b);
      return `Items must be unique: items ${first} and ${second} are the same`;
    }
    case 'enum': {
      const allowed = params.allowedValues as unknown[];
      return allowed.length <= 12 ? `Must be one of: ${allowed.join(', ')}` : 'Is not one of the allowed values';
    }
    case 'format':
      return FORMAT_MESSAGES[params.format as string] ?? `Must be a valid ${params.format}`;
    case 'pattern':
      return `Must match the pattern ${params.pattern}`;
    default:
      return error.message ?? 'Is not valid';
  }
}

const escapePointer = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

function pointerOf(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return `${error.instancePath}/${escapePointer(String(params.missingProperty))}`;
  if (error.keyword === 'additionalProperties') {
    return `${error.instancePath}/${escapePointer(String(params.additionalProperty))}`;
  }
  return error.instancePath;
}

/** Turns validator errors into envelope items; a wrong type at a place hides the other errors there. */
export function toErrorItems(errors: readonly ErrorObject[], part: Part): ErrorItem[] {
  const mistyped = new Set(errors.filter((error) => error.keyword === 'type').map((error) => error.instancePath));
  const items: ErrorItem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    if (error.keyword !== 'type' && mistyped.has(error.instancePath)) continue;
    const pointer = pointerOf(error);
    const custom =
      (error.keyword === 'type' && error.data === null && customMessage(error.parentSchema, 'null')) ||
      customMessage(error.parentSchema, error.keyword);
    const item: ErrorItem = {
      loc: part + pointer,
      msg: custom?.msg ?? defaultMessage(error),
      type: custom?.type ?? TYPES[error.keyword] ?? error.keyword,
    };
    const key = `${item.loc}\u0000${item.msg}`;
    if (seen.has(key)) continue;
    seen.add(key);
    items.push(item);
  }
  return items;
}
