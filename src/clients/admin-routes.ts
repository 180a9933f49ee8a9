import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../http/errors.js';
import { ErrorEnvelope } from '../http/schemas.js';
import { hashSecret, matchesAny } from './api-keys.js';
import type { ClientRepository } from './repository.js';
import { ClientName } from './schema.js';

const ClientId = Type.String({ format: 'uuid' });
const IssuedKey = {
  api_key: Type.String({ description: 'Shown this once; only its hash is kept.' }),
  key_id: Type.String({ format: 'uuid' }),
};
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 404: ErrorEnvelope };

export interface AdminOptions {
  clients: ClientRepository;
  adminToken: string;
}

/** Client and API-key management, for the operator holding ADMIN_TOKEN. */
export const adminRoutes: FastifyPluginAsyncTypebox<AdminOptions> = async (app, { clients, adminToken }) => {
  const tokenHash = [hashSecret(adminToken)];
  app.addHook('onRequest', async (request) => {
    const token = /^bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!token || !matchesAny(token, tokenHash)) {
      throw new ApiError(401, 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>', [
        { loc: 'header/authorization', msg: 'Invalid admin token', type: 'invalid_credentials' },
      ]);
    }
  });

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

  app.post(
    '/clients/:client_id/api-keys',
    {
      schema: {
        summary: 'Issue another API key for a client',
        params: Type.Object({ client_id: ClientId }),
        response: { 201: Type.Object(IssuedKey), ...errors },
      },
    },
    async (request, reply) => {
      const key = await clients.createKey(request.params.client_id);
      if (!key) throw new ApiError(404, 'Client not found');
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
