import type { Ajv, AnySchemaObject, ErrorObject, ValidateFunction } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import type { FastifySchemaCompiler } from 'fastify';
import type { ErrorItem } from './error-envelope.js';
import { MAX_COUNTED_PROBLEMS, MAX_LISTED_PROBLEMS, ValidationFailure } from './errors.js';
import { createAjv, partOf, toErrorItems, type Part } from './validation.js';

/**
 * Request validation whose cost is bounded by the schema's limits, not by the size of the body.
 *
 * A validator that reports every problem of a body of a million items builds millions of error
 * objects. So a request is checked in three steps:
 *
 * 1. The length of every array the schema bounds (`maxItems`), before any item is looked at: a
 *    batch over its limit is refused for that alone, at the cost of reading a few lengths.
 * 2. The whole value, stopping at the first problem: the one pass a valid request costs.
 * 3. Only for an invalid request: the problems, found one array item at a time, so that the
 *    error objects of one item are all there are at once. The first MAX_LISTED_PROBLEMS are
 *    kept; the rest are counted, up to MAX_COUNTED_PROBLEMS: past that a count costs more than
 *    it tells.
 *
 * Arrays are found through `properties` and `items`; one inside a union (anyOf, oneOf) is
 * checked with the value around it.
 */

/**
 * A schema with its arrays taken out: the value is checked alone, each array's items apart. Its
 * validator is compiled when a first invalid request needs it, not at start-up.
 */
interface SplitSchema {
  validator(): ValidateFunction;
  arrays: ArrayOfSchema[];
}

interface ArrayOfSchema {
  /** The property names leading from the value to the array ([] when the value is the array). */
  path: readonly string[];
  /** The same path as a JSON Pointer. */
  pointer: string;
  schema: AnySchemaObject;
  item: SplitSchema;
}

const isSchemaObject = (value: unknown): value is AnySchemaObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const escapePointer = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

function split(ajv: Ajv, schema: AnySchemaObject): SplitSchema {
  const arrays: ArrayOfSchema[] = [];
  const withoutArrays = (node: AnySchemaObject, path: string[]): AnySchemaObject => {
    if (node.type === 'array' && isSchemaObject(node.items)) {
      const pointer = path.map((name) => `/${escapePointer(name)}`).join('');
      arrays.push({ path, pointer, schema: node, item: split(ajv, node.items) });
      return { ...node, items: {} };
    }
    if (node.type === 'object' && isSchemaObject(node.properties)) {
      const properties = Object.entries(node.properties as Record<string, AnySchemaObject>).map(
        ([name, property]) => [name, withoutArrays(property, [...path, name])] as const,
      );
      return { ...node, properties: Object.fromEntries(properties) };
    }
    return node;
  };
  const shell = withoutArrays(schema, []);
  let compiled: ValidateFunction | undefined;
  return { validator: () => (compiled ??= ajv.compile(shell)), arrays };
}

function valueAt(data: unknown, path: readonly string[]): unknown {
  let node = data;
  for (const name of path) {
    if (!isSchemaObject(node) || !Object.hasOwn(node, name)) return undefined;
    node = node[name];
  }
  return node;
}

/** Calls `visit` with each array of `data` that `schema` describes, and the pointer to it. */
function eachArray(schema: SplitSchema, data: unknown, pointer: string, visit: (array: ArrayOfSchema, items: unknown[], pointer: string) => void) {
  for (const array of schema.arrays) {
    const items = valueAt(data, array.path);
    if (Array.isArray(items)) visit(array, items, pointer + array.pointer);
  }
}

/** The problems of a request: the first few as envelope items, and how many there were. */
class Problems {
  readonly listed: ErrorItem[] = [];
  total = 0;

  constructor(private readonly part: Part) {}

  add(errors: readonly ErrorObject[]) {
    const items = toErrorItems(errors, this.part);
    this.total += items.length;
    this.listed.push(...items.slice(0, MAX_LISTED_PROBLEMS - this.listed.length));
  }

  get countedEnough() {
    return this.total >= MAX_COUNTED_PROBLEMS;
  }

  failure() {
    return { error: new ValidationFailure(this.listed, this.total, this.countedEnough) };
  }
}

function tooLong(schema: SplitSchema, data: unknown, pointer: string, problems: Problems) {
  eachArray(schema, data, pointer, (array, items, at) => {
    const limit = array.schema.maxItems as number | undefined;
    if (limit !== undefined && items.length > limit) {
      const error = { keyword: 'maxItems', instancePath: at, schemaPath: '', params: { limit }, parentSchema: array.schema };
      return problems.add([error]);
    }
    if (array.item.arrays.length > 0) items.forEach((item, index) => tooLong(array.item, item, `${at}/${index}`, problems));
  });
}

function everyProblem(schema: SplitSchema, data: unknown, pointer: string, problems: Problems) {
  // Ajv's own way to validate a part of a value: its errors then point into the whole.
  const context = { instancePath: pointer, rootData: data, dynamicAnchors: {} } as unknown as DataValidationCxt;
  const validate = schema.validator();
  if (!validate(data, context)) problems.add(validate.errors!);
  eachArray(schema, data, pointer, (array, items, at) => {
    for (let index = 0; index < items.length && !problems.countedEnough; index++) {
      everyProblem(array.item, items[index], `${at}/${index}`, problems);
    }
  });
}

/**
 * Bodies are validated strictly (a string is never a number). Query strings and path parameters
 * arrive as text, so their validator converts "2" to 2 where the schema asks for a number.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<AnySchemaObject> {
  const ajvs = {
    strict: { everyProblem: createAjv({ coerceTypes: false, allErrors: true }), firstProblem: createAjv({ coerceTypes: false, allErrors: false }) },
    coercing: { everyProblem: createAjv({ coerceTypes: true, allErrors: true }), firstProblem: createAjv({ coerceTypes: true, allErrors: false }) },
  };
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? ajvs.strict : ajvs.coercing;
    const part = partOf(httpPart);
    const valid = ajv.firstProblem.compile(schema);
    const splitSchema = split(ajv.everyProblem, schema);
    return (data: unknown) => {
      const overLimit = new Problems(part);
      tooLong(splitSchema, data, '', overLimit);
      if (overLimit.total > 0) return overLimit.failure();
      if (valid(data)) return true;
      const problems = new Problems(part);
      everyProblem(splitSchema, data, '', problems);
      // The split schema checks what the whole one does; should they ever differ, the request
      // is still refused with the problem found.
      if (problems.total === 0) problems.add(valid.errors!);
      return problems.failure();
    };
  };
}
