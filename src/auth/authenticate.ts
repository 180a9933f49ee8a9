import type { FastifyRequest } from 'fastify';
import { hashSecret, matching } from '../clients/api-keys.js';
import type { ClientRepository } from '../clients/repository.js';
import { ApiError, invalidCredentials } from '../http/errors.js';
import { isUuid } from '../uuid.js';
import type { Environment, Tenant } from './tenant.js';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
  interface FastifyContextConfig {
    /** A route that writes nothing of the client's data though its method is not GET (creating an export): keys of scope `read` may use it. */
    readsOnly?: true;
  }
}

/** Methods that change nothing: keys of scope `read` may use every route of them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

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
 * an unknown client id and a revoked key all get the same answer (invalidCredentials). A key of
 * scope `read` is refused (403) every route that is not GET, unless it writes nothing of the
 * client's data (`config.readsOnly`): refused by default, a new route that writes is never open to it.
 */
export function authenticate(clients: ClientRepository, environment: Environment) {
  return async (request: FastifyRequest): Promise<void> => {
    const { apiKey, clientId } = credentials(request);

    if (environment === 'uat' && clientId === TEST_CLIENT_ID && apiKey === TEST_API_KEY) {
      request.tenant = { clientId, environment, dryRun: true };
      return;
    }
    const keys = isUuid(clientId) ? await clients.activeKeys(clientId.toLowerCase()) : [];
    const keyHash = hashSecret(apiKey);
    const key = matching(keyHash, keys);
    if (!key) {
      throw invalidCredentials();
    }
    request.tenant = { clientId: clientId.toLowerCase(), environment, dryRun: false, apiKeyHash: keyHash.toString('base64url') };
    if (key.scope === 'read' && !SAFE_METHODS.has(request.method) && !request.routeOptions.config.readsOnly) {
      throw new ApiError(403, 'This API key can only read: sending or changing data needs a key of scope write', [
        { loc: 'header/authorization', msg: 'API key of scope read', type: 'read_only_key' },
      ]);
    }
  };
}
