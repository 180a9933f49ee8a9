import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { matchesAny } from '../clients/api-keys.js';
import type { ClientRepository } from '../clients/repository.js';
import { ApiError } from '../http/errors.js';
import type { Environment, Tenant } from './tenant.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The hosted API's own examples put a scheme before the key; accept one and ignore it. */
const SCHEME = /^(?:basic|bearer)\s+/i;
const TEST_CLIENT_ID = 'test';
const TEST_API_KEY = 'None';

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) {
    throw new ApiError(401, `Missing ${name === 'authorization' ? 'Authorization' : 'Data-Client-ID'} header`, [
      { loc: `header/${name}`, msg: 'Header required', type: 'required' },
    ]);
  }
  return text;
}

/**
 * Resolves `request.tenant` from the `Authorization` and `Data-Client-ID` headers. A wrong key,
 * an unknown client id and a revoked key all get the same answer, so that a caller learns
 * nothing about which client ids exist.
 */
export function authenticate(clients: ClientRepository, environment: Environment): onRequestAsyncHookHandler {
  return async (request) => {
    const apiKey = header(request, 'authorization')!.replace(SCHEME, '');
    const clientId = header(request, 'data-client-id')!;

    if (environment === 'uat' && clientId === TEST_CLIENT_ID && apiKey === TEST_API_KEY) {
      request.tenant = { clientId, environment, dryRun: true };
      return;
    }
    const hashes = UUID.test(clientId) ? await clients.activeKeyHashes(clientId.toLowerCase()) : [];
    if (!matchesAny(apiKey, hashes)) {
      throw new ApiError(401, 'Invalid credentials: the API key is not valid for this Data-Client-ID', [
        { loc: 'header/authorization', msg: 'Invalid API key for this client', type: 'invalid_credentials' },
      ]);
    }
    request.tenant = { clientId: clientId.toLowerCase(), environment, dryRun: false };
  };
}
