import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { invalidCredentials } from '../http/errors.js';
import { EnvironmentServed, ErrorEnvelope } from '../http/schemas.js';

export const ClientAnswer = Type.Object(
  {
    client_id: Type.String({ description: 'The client the credentials are of.' }),
    name: Type.String({ description: 'Its name, as the admin API set it.' }),
    time_zone: Type.String({
      description: "Its IANA time zone, whose local days the reports API's start_date and end_date, and exports' periods, name.",
    }),
    environment: EnvironmentServed,
  },
  {
    examples: [{ client_id: '6f1c2d9e-3b4a-4c5d-8e7f-9a0b1c2d3e4f', name: 'Acme', time_zone: 'America/New_York', environment: 'production' }],
  },
);

/** GET /v1/client: the client of the credentials, what a page needs before it asks for figures (whose days are the client's). */
export const clientRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/client',
    {
      schema: {
        summary: 'The client of these credentials',
        description: "The client the API key is of: its name, its time zone (whose days reports count) and the environment the port serves. One primary-key read: a dashboard asks it first.",
        response: { 200: ClientAnswer, 401: ErrorEnvelope },
      },
    },
    async (request) => {
      const { clientId, environment } = request.tenant;
      const profile = await request.store.clients.profile(clientId);
      // The key was checked a moment ago: a client gone since is as unknown as a wrong key.
      if (!profile) throw invalidCredentials();
      return { client_id: clientId, ...profile, environment };
    },
  );
};
