import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError, invalidRequest } from '../http/errors.js';
import { ErrorEnvelope } from '../http/schemas.js';
import type { RateLimits } from '../rate-limit/limits.js';
import { hashSecret, KEY_SCOPES, matchesAny } from './api-keys.js';
import type { ClientDeletion } from './deletion.js';
import type { ClientRepository } from './repository.js';
import { ClientName } from './schema.js';
import { CHANNEL_GROUPINGS, DEFAULT_TRAINING_DAYS, MARKOV_ORDERS, MAX_TRAINING_DAYS, type LearningSettings } from '../attribution/index.js';

const CLIENT_ID_EXAMPLE = '5f0c2a3e-8d1b-4c7a-9e2f-1a2b3c4d5e6f';
const KEY_ID_EXAMPLE = '0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a';
const ClientId = Type.String({ format: 'uuid', examples: [CLIENT_ID_EXAMPLE] });
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
/** Bounds of a client's collect origins: far past the domains one shop runs. */
export const COLLECT_ORIGIN_LIMITS = { entries: 100, length: 255 };
const CollectOrigins = Type.Array(Type.String({ minLength: 1, maxLength: COLLECT_ORIGIN_LIMITS.length }), {
  maxItems: COLLECT_ORIGIN_LIMITS.entries,
  uniqueItems: true,
  description: `Browser origins (https://shop.example, as the Origin header spells them) that POST /v1/collect takes this client's events from; events from any other are dropped. [] (the default): any origin. At most ${COLLECT_ORIGIN_LIMITS.entries}.`,
});
/** An origin as browsers send it: scheme, host and a port other than the scheme's default, lower case, nothing else. */
const isOrigin = (value: string) => {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
};
const ChannelGrouping = Type.Unsafe<LearningSettings['channel_grouping']>({
  type: 'string',
  enum: CHANNEL_GROUPINGS,
  description: "The states of the data-driven models (markov, shapley): a touchpoint's platform_name, else its channel (platform), or its platform and campaign (platform_campaign, meta:1234). Default platform.",
  'x-messages': { enum: `Must be one of ${CHANNEL_GROUPINGS.join(', ')}` },
});
const TrainingDays = Type.Integer({
  minimum: 1,
  maximum: MAX_TRAINING_DAYS,
  description: `The days before the period asked that the data-driven models learn from. Default ${DEFAULT_TRAINING_DAYS}.`,
});
const MarkovOrder = Type.Unsafe<LearningSettings['markov_order']>({
  type: 'integer',
  enum: MARKOV_ORDERS,
  description: "The order of markov's chain: a state is the last markov_order channels of a path. Default 1.",
  'x-messages': { enum: `Must be one of ${MARKOV_ORDERS.join(', ')}` },
});
const ClientParams = Type.Object({ client_id: ClientId });
const clientNotFound = () => new ApiError(404, 'Client not found');
/** The client of the examples, once its time zone and source mapping are set (the example of PATCH). */
const CLIENT_PATCH_EXAMPLE = { time_zone: 'America/New_York', source_platforms: { fb: 'meta', ig: 'meta' } };
const ClientView = Type.Object(
  {
    client_id: ClientId,
    name: Type.String(),
    time_zone: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    source_platforms: Type.Record(Type.String(), Type.String()),
    collect_origins: Type.Array(Type.String()),
    channel_grouping: ChannelGrouping,
    training_days: TrainingDays,
    markov_order: MarkovOrder,
  },
  {
    examples: [
      {
        client_id: CLIENT_ID_EXAMPLE,
        name: 'Acme',
        ...CLIENT_PATCH_EXAMPLE,
        created_at: '2024-02-01T10:00:00.000Z',
        collect_origins: [],
        channel_grouping: 'platform',
        training_days: 90,
        markov_order: 1,
      },
    ],
  },
);
const KeyScope = Type.Unsafe<(typeof KEY_SCOPES)[number]>({
  type: 'string',
  enum: KEY_SCOPES,
  description: 'What the key may do: write (send and read data) or read (reports, exports, explanations and the dashboard; refused 403 everything that writes).',
  'x-messages': { enum: `Must be one of ${KEY_SCOPES.join(', ')}` },
});
const IssuedKey = {
  api_key: Type.String({ description: 'Shown this once; only its hash is kept.' }),
  key_id: Type.String({ format: 'uuid' }),
  scope: KeyScope,
};
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 404: ErrorEnvelope };

export interface AdminOptions {
  clients: ClientRepository;
  deletion: ClientDeletion;
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
export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (app, { clients, deletion, adminToken, rateLimits }) => {
  app.addHook('onRequest', rateLimits.guardAuthentication(authenticateAdmin(adminToken), 'failed admin authentication'));

  app.post(
    '/clients',
    {
      schema: {
        summary: 'Create a client and its first API key',
        description: 'Answers the client id and its first API key, shown this once. The admin token goes in Authorization: Bearer.',
        body: Type.Object({ name: ClientName }, { additionalProperties: false, examples: [{ name: 'Acme' }] }),
        response: {
          201: Type.Object(
            { client_id: ClientId, name: Type.String(), ...IssuedKey },
            {
              examples: [
                { client_id: CLIENT_ID_EXAMPLE, name: 'Acme', api_key: 'trb_Ex4mpleWriteKey_shownOnce-0123456789abcdefg', key_id: '8a1401e2-2bbe-4025-9b35-17b42388a8e6', scope: 'write' },
              ],
            },
          ),
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { client_id, name, api_key, key_id, scope } = await clients.create(request.body.name);
      return reply.code(201).send({ client_id, name, api_key, key_id, scope });
    },
  );

  app.get(
    '/clients/:client_id',
    {
      schema: {
        summary: 'Show a client',
        description: 'Its name, time zone, source mapping and pixel origins; never its keys.',
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
        summary: 'Rename a client, set its time zone, its source mapping, the origins of its pixel events or its data-driven models',
        description: 'Changes the fields sent; the others keep their values. The time zone decides the local days of exports and reports.',
        params: ClientParams,
        body: Type.Object(
          {
            name: Type.Optional(ClientName),
            time_zone: Type.Optional(TimeZone),
            source_platforms: Type.Optional(SourcePlatforms),
            collect_origins: Type.Optional(CollectOrigins),
            channel_grouping: Type.Optional(ChannelGrouping),
            training_days: Type.Optional(TrainingDays),
            markov_order: Type.Optional(MarkovOrder),
          },
          { additionalProperties: false, minProperties: 1, examples: [CLIENT_PATCH_EXAMPLE] },
        ),
        response: { 200: ClientView, ...errors },
      },
    },
    async (request) => {
      const notOrigins = (request.body.collect_origins ?? []).flatMap((origin, index) =>
        isOrigin(origin) ? [] : [{ loc: `body/collect_origins/${index}`, msg: 'Must be an origin as browsers send it, such as https://shop.example (lower case, no path, no default port)', type: 'format' }],
      );
      if (notOrigins.length > 0) throw invalidRequest(notOrigins);
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

  app.delete(
    '/clients/:client_id',
    {
      schema: {
        summary: 'Delete a client: every row of it in both environments, and every export file',
        description:
          'Its API keys are revoked first, then its rows are deleted in batches, each a short transaction, so that other clients are ' +
          'served meanwhile; answered once all of it is gone (a large client takes a while). Interrupted, send it again: it carries on.',
        params: ClientParams,
        response: {
          200: Type.Object(
            {
              client_id: ClientId,
              deleted: Type.Record(Type.String(), Type.Integer(), { description: 'Rows deleted, by table.' }),
            },
            {
              examples: [
                {
                  client_id: CLIENT_ID_EXAMPLE,
                  deleted: {
                    api_keys: 2,
                    exports: 14,
                    order_aliases: 3100,
                    orders: 120000,
                    identities: 41250,
                    touchpoints: 863400,
                    spend_hourly: 52560,
                    spend_daily: 2190,
                    ad_accounts: 3,
                    attribution_credit_days: 64800,
                    attribution_visit_days: 27000,
                    attribution_paths: 118500,
                    attribution_days: 5400,
                    attribution_totals_kept: 1,
                    attribution_changes: 12,
                    attribution_change_keys: 0,
                    attribution_learnt_models: 4,
                    clients: 1,
                  },
                },
              ],
            },
          ),
          ...errors,
        },
      },
    },
    async (request) => {
      const deleted = await deletion.delete(request.params.client_id);
      if (!deleted) throw clientNotFound();
      request.log.info({ client_id: request.params.client_id, deleted }, 'client deleted');
      return { client_id: request.params.client_id, deleted };
    },
  );

  app.post(
    '/clients/:client_id/api-keys',
    {
      schema: {
        summary: 'Issue another API key for a client',
        description:
          'A new key beside the existing ones, so that a client can rotate keys without downtime, or give a marketer or a dashboard a key that only reads ' +
          '(scope read); shown this once. Without a body, a key that writes.',
        params: ClientParams,
        body: Type.Object({ scope: Type.Optional(KeyScope) }, { additionalProperties: false, examples: [{ scope: 'read' }] }),
        response: {
          201: Type.Object(IssuedKey, { examples: [{ api_key: 'trb_Ex4mpleReadKey_shownOnce-0123456789abcdefgh', key_id: KEY_ID_EXAMPLE, scope: 'read' }] }),
          ...errors,
        },
      },
      // Sent without a body, as before keys had scopes: one that writes.
      config: { optionalBody: true },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const key = await clients.createKey(request.params.client_id, request.body.scope ?? 'write');
      if (!key) throw clientNotFound();
      return reply.code(201).send(key);
    },
  );

  app.delete(
    '/clients/:client_id/api-keys/:key_id',
    {
      schema: {
        summary: 'Revoke an API key; it stops working at once',
        description: 'The key is kept, revoked, so that its id stays known; requests with it are answered 401.',
        params: Type.Object({ client_id: ClientId, key_id: Type.String({ format: 'uuid', examples: [KEY_ID_EXAMPLE] }) }),
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
