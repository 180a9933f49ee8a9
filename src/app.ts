import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import underPressure from '@fastify/under-pressure';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyPluginOptions, type RawServerDefault } from 'fastify';
import type { Logger } from 'pino';
import { authenticate } from './auth/authenticate.js';
import type { Environment } from './auth/tenant.js';
import { collectRoutes } from './collect/routes.js';
import { segmentRoutes } from './collect/segment.js';
import { attributionModelRoutes, attributionRoutes } from './attribution/routes.js';
import { adminRoutes } from './clients/admin-routes.js';
import { createClientDeletion } from './clients/deletion.js';
import { createClientRepository } from './clients/repository.js';
import { customerRoutes } from './customers/routes.js';
import type { Config } from './config.js';
import { isUuid } from './uuid.js';
import type { Database } from './db/index.js';
import { createStoreChooser } from './db/store.js';
import { createLinkSigner, signingSecret } from './exports/links.js';
import { exportFileRoutes, exportRoutes } from './exports/routes.js';
import { feedHealthRoutes } from './feeds/health.js';
import { clientRoutes } from './clients/routes.js';
import { rateRoutes } from './rates/routes.js';
import { healthRoutes } from './health.js';
import { answerClientError } from './http/client-errors.js';
import { limitTestCredentialBodies } from './http/test-credentials.js';
import { ApiError, registerErrorHandling, sendError } from './http/errors.js';
import { registerJsonBody, registerQueryCheck } from './http/json-body.js';
import { registerLingeringClose } from './http/lingering-close.js';
import { serializerCompiler, validatorCompiler } from './http/schema-compilers.js';
import { SECURITY_HEADERS } from './http/security-headers.js';
import { LEGACY_UPSERT, orderRoutes, orderUpsertRoute } from './orders/routes.js';
import { pageRoutes } from './pages/routes.js';
import { pixelRoutes } from './pixel/routes.js';
import { reportRoutes } from './reports/routes.js';
import { createRateLimits, registerRateLimits, type RateLimits } from './rate-limit/limits.js';
import { daily, hourly } from './spend/collection.js';
import { spendRoutes } from './spend/routes.js';
import { identityRoutes, touchpointRoutes } from './touchpoints/routes.js';
import { version } from './version.js';

const OVERLOAD_RETRY_AFTER_SECONDS = 2;

/**
 * The groups of the API reference (/docs), in the order it shows them. Each operation is in one,
 * given where its plugin is registered (`tagged`).
 */
const API_TAGS = [
  { name: 'Orders', description: "Orders and their aliases: upsert, patch and read them, and erase a customer's personal data." },
  { name: 'Spend', description: 'Ad spend, in hourly and daily records: upsert, list and delete them.' },
  { name: 'Touchpoints', description: 'Visits and ad views, the input of attribution, and the identities that link visitors to customers.' },
  { name: 'Attribution', description: 'Why an order is credited as it is, and the attribution models with what the data-driven ones learnt.' },
  { name: 'Exports', description: 'CSV files of spend, revenue and attributed metrics: create and poll them, and the catalogs of what they can hold.' },
  { name: 'Reports', description: "An export's rows at once as JSON, the client of the credentials, and whether each feed (orders, spend, touchpoints) is arriving." },
  { name: 'Exchange rates', description: "The client's own exchange rates, one a currency pair a day: send them, and read a pair's, inverse and cross rates derived." },
  { name: 'Collector', description: "Events from browsers and event pipelines: the public endpoint of /pixel.js, and Segment-spec events forwarded with the API's credentials." },
  { name: 'Admin', description: 'Clients and their API keys, for the operator holding ADMIN_TOKEN, on the production port.' },
] as const;
type ApiTag = (typeof API_TAGS)[number]['name'];

/** `plugin`, with every route it adds in the group `tag` of the API reference. */
function tagged<Options extends FastifyPluginOptions>(tag: ApiTag, plugin: FastifyPluginAsyncTypebox<Options>): FastifyPluginAsyncTypebox<Options> {
  return async (scope, options) => {
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, tags: [tag] };
    });
    await plugin(scope, options);
  };
}

export interface AppOptions {
  config: Config;
  db: Database;
  environment: Environment;
  /** Omitted: no logging (tests). */
  logger?: Logger;
  /** Shared by the apps of a process; omitted, the app makes its own and closes it with itself. */
  rateLimits?: RateLimits;
}

/** A caller's own X-Request-Id is kept when it is a UUID, so its logs and ours line up. */
function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && isUuid(incoming) ? incoming : randomUUID();
}

/** Builds the API of one environment (production or UAT) on a shared database. */
export async function buildApp({ config, db, environment, logger, rateLimits }: AppOptions) {
  const app = Fastify<RawServerDefault>({
    loggerInstance: logger?.child({ environment }),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    // Node checks for expired requests every connectionsCheckingInterval (30 s by default), and
    // gives headers their own (longer) timeout: both brought in line with the request timeout.
    requestTimeout: config.requestTimeoutMs,
    http: { headersTimeout: config.requestTimeoutMs, connectionsCheckingInterval: Math.min(1_000, Math.ceil(config.requestTimeoutMs / 4)) },
    genReqId: requestId,
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: false,
    // Errors Fastify answers before any hook runs (a URL that cannot be decoded).
    frameworkErrors: (_error, request, reply) =>
      sendError(reply.header('x-request-id', request.id), 400, 'The URL is malformed'),
    clientErrorHandler: answerClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerJsonBody(app);
  registerLingeringClose(app);
  registerQueryCheck(app);
  registerErrorHandling(app);

  // Fastify's own 503 for requests arriving while it closes has another body; this one has ours.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Answers hold clients' data, keys and download links: no cache may keep one, error answers
  // included. Every answer, public ones too: no route can forget it (/pixel.js, the one answer
  // meant to be cached, replaces it).
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      reply.header('connection', 'close');
      throw new ApiError(503, 'The server is shutting down; send the request again', null, { 'retry-after': '1' });
    }
  });
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  // Headers for an API: no sniffing, no framing, HTTPS remembered, nothing cross-origin unless configured.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    done();
  });
  if (config.corsOrigins.length > 0) {
    await app.register(cors, { origin: config.corsOrigins, methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'] });
  }
  if (config.overloadEventLoopDelayMs > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.overloadEventLoopDelayMs,
      pressureHandler: (_request, reply) => {
        sendError(reply.header('retry-after', String(OVERLOAD_RETRY_AFTER_SECONDS)), 503, 'The server is overloaded; send the request again shortly');
      },
    });
  }

  // The admin API is the production port's, when an admin token is configured.
  const adminToken = environment === 'production' ? config.adminToken : undefined;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: `Tributary ${environment === 'uat' ? 'UAT ' : ''}API`,
        version,
        description: 'Commerce data ingestion and export: orders, aliases, ad spend, touchpoints and identities.',
      },
      components: {
        securitySchemes: {
          api_key: { type: 'apiKey', in: 'header', name: 'Authorization' },
          client_id: { type: 'apiKey', in: 'header', name: 'Data-Client-ID' },
        },
      },
      tags: API_TAGS.filter((tag) => adminToken || tag.name !== 'Admin'),
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { db });
  await app.register(pixelRoutes);
  await app.register(pageRoutes);

  const signer = createLinkSigner(await signingSecret(db, config.exportSigningSecret), config.publicUrl);
  await app.register(exportFileRoutes, { signer, exportsDir: config.exportsDir });

  const limits = rateLimits ?? createRateLimits(config, logger);
  if (!rateLimits) {
    app.addHook('onClose', () => limits.close());
    await limits.ready();
  }

  const clients = createClientRepository(db);
  if (adminToken) {
    await app.register(tagged('Admin', adminRoutes), {
      prefix: '/admin/v1',
      clients,
      deletion: createClientDeletion(db, { exportsDir: config.exportsDir }),
      adminToken,
      rateLimits: limits,
    });
  }

  // Public: the pixel's events, of the environment of the port they arrive on.
  await app.register(tagged('Collector', collectRoutes), { prefix: '/v1/collect', environment, clients, db, rateLimits: limits });

  const storeOf = createStoreChooser(db, {
    linkTtlSeconds: config.exportLinkTtlSeconds,
    reportLockWaitMs: config.reportLockWaitMs,
    tenantReadConnections: config.tenantReadConnections,
  });
  await app.register(async (api) => {
    api.addHook('onRequest', limits.guardAuthentication(authenticate(clients, environment)));
    // After authentication: the UAT test credentials get the stand-in store, which keeps nothing.
    api.addHook('onRequest', async (request) => {
      request.store = storeOf(request.tenant);
    });
    api.addHook('preParsing', limitTestCredentialBodies);
    registerRateLimits(api, limits);
    api.addHook('onRoute', (route) => {
      route.schema = { security: [{ api_key: [], client_id: [] }], ...route.schema };
    });
    await api.register(tagged('Orders', orderRoutes), { prefix: '/v2/orders' });
    await api.register(tagged('Orders', orderUpsertRoute), { prefix: '/v1/orders', path: LEGACY_UPSERT });
    await api.register(tagged('Attribution', attributionRoutes), { prefix: '/v2/orders' });
    await api.register(tagged('Attribution', attributionModelRoutes), { prefix: '/v1/attribution' });
    for (const collection of [hourly, daily]) await api.register(tagged('Spend', spendRoutes), { prefix: collection.prefix, collection });
    await api.register(tagged('Touchpoints', touchpointRoutes), { prefix: '/v1/touchpoints' });
    await api.register(tagged('Touchpoints', identityRoutes), { prefix: '/v1/identities' });
    // Erasure changes orders and touchpoints alike; it is listed with orders, whose customers it names.
    await api.register(tagged('Orders', customerRoutes), { prefix: '/v1/customers' });
    await api.register(tagged('Collector', segmentRoutes), { prefix: '/v1/events' });
    await api.register(tagged('Exports', exportRoutes), { prefix: '/v1/exports', signer });
    await api.register(tagged('Reports', reportRoutes), { prefix: '/v1/reports' });
    await api.register(tagged('Reports', feedHealthRoutes), { prefix: '/v1/health' });
    await api.register(tagged('Reports', clientRoutes), { prefix: '/v1' });
    await api.register(tagged('Exchange rates', rateRoutes), { prefix: '/v1/exchange-rates' });
  });

  return app;
}
