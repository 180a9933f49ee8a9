import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError, invalidRequest } from '../http/errors.js';
import { ErrorEnvelope } from '../http/schemas.js';
import type { RateLimits } from '../rate-limit/limits.js';
import { hashSecret, matchesAny } from './api-keys.js';
import type { ClientRepository } from './repository.js';
import { ClientName } from './schema.js';

const ClientId = Type.String({ format: 'uuid' });
const TimeZone = Type.String({ minLength: 1, description: 'IANA time zone of the client\'s exports, such as Europe/Berlin. Default UTC.' });
/** Bounds of a source mapping: far past the sources a shop tags its links with. */
export const SOURCE_MAPPING_LIMITS = { entries: 100, length: 64 };
const KEY_LENGTH = `Keys must be 1 to ${SOURCE_MAPPING_LIMITS.length} characters long`;
const SourcePlatforms = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: Type.String({ minLength: 1, maxLength: SOURCE_MAPPING_LIMITS.length, description: 'The platform_name it means.' }),
  // One message for a key too short or too long, and for the propertyNames failure it causes: one problem listed.
  propertyNames: { type: 'string', minLength: 1, maxLength: SOURCE_MAPPING_LIMITS.length, 'x-messages': { minLength: KEY_LENGTH, maxLength: KEY_LENGTH } },
  maxProperties: SOURCE_MAPPING_LIMITS.entries,
  description: `utm_source values (exact, case-sensitive) and the platform_name each means, such as {"fb": "meta"}: touchpoints written afterwards name their platform through it. At most ${SOURCE_MAPPING_LIMITS.entries} entries, keys and values 1 to ${SOURCE_MAPPING_LIMITS.length} characters.`,
  'x-messages': {
    propertyNames: KEY_LENGTH,
    maxProperties: { msg: `Must have at most ${SOURCE_MAPPING_LIMITS.entries} entries`, type: 'max_properties' },
  },
});
const ClientParams = Type.Object({ client_id: ClientId });
const clientNotFound = () => new ApiError(404, 'Client not found');
const ClientView = Type.Object({
  client_id: ClientId,
  name: Type.String(),
  time_zone: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  source_platforms: Type.Record(Type.String(), Type.String()),
});
const IssuedKey = {
  api_key: Type.String({ description: 'Shown this once; only its hash is kept.' }),
  key_id: Type.String({ format: 'uuid' }),
};
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 404: ErrorEnvelope };

export interface AdminOptions {
  clients: ClientRepository;
  adminToken: string;
  rateLimits: Pick<RateLimits, 'guardAuthentication'>;
}

/** Checks `Authorization: Bearer <ADMIN_TOKEN>`, or a 401. */
function authenticateAdmin(adminToken: string) {
  const tokenHash = [hashSecret(adminToken)];
  return async (request: FastifyRequest) => {
    const token = /^bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!token || !matchesAny(hashSecret(token), tokenHash)) {
      throw new ApiError(401, 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>', [
        { loc: 'header/authorization', msg: 'Invalid admin token', type: 'invalid_credentials' },
      ]);
    }
  };
}

/**
 * Client and API-key management, for the operator holding ADMIN_TOKEN. Failed attempts count
 * against their address's failed-authentication budget, as the API's do, and are logged.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (app, { clients, adminToken, rateLimits }) => {
  app.addHook('onRequest', rateLimits.guardAuthentication(authenticateAdmin(adminToken), 'failed admin authentication'));

  app.post(
    '/clients',
    {
      schema: {
        summary: 'Create a client and its first API key',
        body: Type.Object({ name: ClientName }, { additionalProperties: false }),
        response: { 201: Type.Object({ client_id: ClientId, name: Type.String(), ...IssuedKey }), ...errors },
      },
    },
    async (request, reply) => {
      const { client_id, name, api_key, key_id } = await clients.create(request.body.name);
      return reply.code(201).send({ client_id, name, api_key, key_id });
    },
  );

  app.get(
    '/clients/:client_id',
    {
      schema: {
        summary: 'Show a client',
        params: ClientParams,
        response: { 200: ClientView, ...errors },
      },
    },
    async (request) => {
      const client = await clients.find(request.params.client_id);
      if (!client) throw clientNotFound();
      return client;
    },
  );

  app.patch(
    '/clients/:client_id',
    {
      schema: {
        summary: 'Rename a client, set its time zone or its source mapping',
        params: ClientParams,
        body: Type.Object(
          { name: Type.Optional(ClientName), time_zone: Type.Optional(TimeZone), source_platforms: Type.Optional(SourcePlatforms) },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: ClientView, ...errors },
      },
    },
    async (request) => {
      const result = await clients.update(request.params.client_id, request.body);
      if (result === 'unknown_client') throw clientNotFound();
      if (result === 'unknown_time_zone') {
        throw invalidRequest([
          { loc: 'body/time_zone', msg: 'Must be an IANA time zone name, such as Europe/Berlin or UTC', type: 'enum' },
        ]);
      }
      return result;
    },
  );

  app.post(
    '/clients/:client_id/api-keys',
    {
      schema: {
        summary: 'Issue another API key for a client',
        params: ClientParams,
        response: { 201: Type.Object(IssuedKey), ...errors },
      },
    },
    async (request, reply) => {
      const key = await clients.createKey(request.params.client_id);
      if (!key) throw clientNotFound();
      return reply.code(201).send(key);
    },
  );

  app.delete(
    '/clients/:client_id/api-keys/:key_id',
    {
      schema: {
        summary: 'Revoke an API key; it stops working at once',
        params: Type.Object({ client_id: ClientId, key_id: Type.String({ format: 'uuid' }) }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      const { client_id, key_id } = request.params;
      if (!(await clients.revokeKey(client_id, key_id))) throw new ApiError(404, 'API key not found for this client');
      return reply.code(204).send(null);
    },
  );
};
