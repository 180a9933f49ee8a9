import type { FastifyPluginAsync } from 'fastify';
import type { Database } from './db/index.js';
import { ApiError } from './http/errors.js';

const READINESS_TIMEOUT_MS = 2_000;

/** Liveness and readiness probes; neither needs credentials. */
export const healthRoutes: FastifyPluginAsync<{ db: Database }> = async (app, { db }) => {
  const hide = { hide: true };
  // A busy process is still alive: liveness is never shed under load (readiness is).
  app.get('/healthz', { schema: hide, config: { pressureHandler: () => {} } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: hide }, async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), READINESS_TIMEOUT_MS);
    });
    try {
      await Promise.race([db.query('SELECT 1'), timeout]);
    } catch {
      throw new ApiError(503, 'The database is not answering', null, { 'retry-after': '5' });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ready' };
  });
};
