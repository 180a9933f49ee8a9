import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifySerializerCompiler } from 'fastify';
import { createValidatorCompiler } from './request-validator.js';

/*
 * The schema compilers of every app of the process. Compiling is most of what start-up would
 * allocate: the code generation of Ajv and of fast-json-stringify made 244 MB of short-lived
 * objects for the two apps' routes, which stayed in the old generation until its first full
 * collection and raised the server's peak memory under load by as much (docs/benchmarks.md,
 * "Start-up's garbage"). So a schema is compiled
 *
 * - once, for both apps: the production and UAT apps register the same routes with the same
 *   schema objects (module constants);
 * - when a first request needs it, not at start-up: a route never called costs nothing, and the
 *   garbage of one compilation (up to 10 MB, in 10 to 25 ms) is collected with the request's.
 *
 * test/schema-compilers.test.ts compiles every route's schemas (compileWaitingSchemas), as
 * start-up did, so that a schema Ajv or fast-json-stringify refuses still fails the tests rather
 * than a first request.
 */

type Compiler<Route, Args extends unknown[], Result> = (route: Route) => (...args: Args) => Result;

/** The compilations no request has needed yet; each leaves once done. */
const waiting = new Set<() => unknown>();

/** `compile`, run at the first call of what it makes, and once per schema object and `part` of the request or answer. */
function oncePerSchema<Route extends { schema?: unknown }, Args extends unknown[], Result>(
  compile: Compiler<Route, Args, Result>,
  partOf: (route: Route) => string | undefined,
): Compiler<Route, Args, Result> {
  const made = new WeakMap<object, Map<string | undefined, (...args: Args) => Result>>();
  return (route) => {
    // Fastify calls a compiler for a schema only.
    const schema = route.schema as object;
    const ofSchema = made.get(schema) ?? new Map<string | undefined, (...args: Args) => Result>();
    made.set(schema, ofSchema);
    const part = partOf(route);
    if (!ofSchema.has(part)) {
      let compiled: ((...args: Args) => Result) | undefined;
      const compiledOnce = () => {
        if (compiled === undefined) {
          compiled = compile(route);
          waiting.delete(compiledOnce);
        }
        return compiled;
      };
      waiting.add(compiledOnce);
      ofSchema.set(part, (...args) => compiledOnce()(...args));
    }
    return ofSchema.get(part)!;
  };
}

/** Compiles every schema of the apps built so far that no request has needed yet, as Fastify does at start-up (for tests); how many there were. */
export function compileWaitingSchemas(): number {
  const count = waiting.size;
  for (const compiledOnce of [...waiting]) compiledOnce();
  return count;
}

/** Requests' validators: bodies strict, query strings and parameters converted from text (request-validator.ts). */
export const validatorCompiler = oncePerSchema(createValidatorCompiler(), (route) => route.httpPart);

/** Answers' serializers: Fastify's own (fast-json-stringify, with no shared schemas or options), which depend on the schema alone. */
const fastifySerializers = SerializerSelector()(undefined, {});
export const serializerCompiler = oncePerSchema(
  (route: Parameters<FastifySerializerCompiler<unknown>>[0]) => fastifySerializers({ ...route, httpStatus: route.httpStatus ?? 'default' }),
  () => undefined,
);
