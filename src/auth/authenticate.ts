import type { FastifyRequest } from 'fastify';
import { hashSecret, matchesAny } from '../clients/api-keys.js';
import type { ClientRepository } from '../clients/repository.js';
import { ApiError, invalidCredentials } from '../http/errors.js';
import { isUuid } from '../uuid.js';
import type { Environment, Tenant } from './tenant.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
}

/** The hosted API's own examples put a scheme before the key; accept one and ignore it. */
const SCHEME = /^(?:basic|bearer)\s+/i;
const TEST_CLIENT_ID = 'test';
const TEST_API_KEY = 'None';

const CREDENTIAL_HEADERS = { authorization: 'Authorization', 'data-client-id': 'Data-Client-ID' } as const;

/** The two credential headers, or a 401 naming each one that is missing. */
function credentials(request: FastifyRequest): { apiKey: string; clientId: string } {
  const [apiKey, clientId] = Object.keys(CREDENTIAL_HEADERS).map((name) => {
    const value = request.headers[name];
    return (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
  }) as [string, string];
  const missing = Object.entries(CREDENTIAL_HEADERS).filter((_, i) => ![apiKey, clientId][i]);
  if (missing.length > 0) {
    throw new ApiError(
      401,
      `Missing ${missing.map(([, label]) => label).join(' and ')} header${missing.length > 1 ? 's' : ''}`,
      missing.map(([name]) => ({ loc: `header/${name}`, msg: 'Header required', type: 'required' })),
    );
  }
  return { apiKey: apiKey.replace(SCHEME, ''), clientId };
}

/**
 * Resolves `request.tenant` from the `Authorization` and `Data-Client-ID` headers. A wrong key,
 * an unknown client id and a revoked key all get the same answer (invalidCredentials).
 */
export function authenticate(clients: ClientRepository, environment: Environment) {
  return async (request: FastifyRequest): Promise<void> => {
    const { apiKey, clientId } = credentials(request);

    if (environment === 'uat' && clientId === TEST_CLIENT_ID && apiKey === TEST_API_KEY) {
      request.tenant = { clientId, environment, dryRun: true };
      return;
    }
    const hashes = isUuid(clientId) ? await clients.activeKeyHashes(clientId.toLowerCase()) : [];
    const keyHash = hashSecret(apiKey);
    if (!matchesAny(keyHash, hashes)) {
      throw invalidCredentials();
    }
    request.tenant = { clientId: clientId.toLowerCase(), environment, dryRun: false, apiKeyHash: keyHash.toString('base64url') };
  };
}
