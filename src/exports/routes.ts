import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { METRIC_CATALOG, MODEL_ALIASES, MODELS } from '../attribution/index.js';
import { ApiError, invalidRequest } from '../http/errors.js';
import { ErrorEnvelope } from '../http/schemas.js';
import type { ExportJob } from './jobs.js';
import type { LinkSigner } from './links.js';
import { planExport } from './plan.js';
import { BUCKET_FIELDS, ExportRequest } from './schema.js';
import { exportDir } from './produce.js';

/** Making an export reads the client's data and writes none of it: keys of scope read may. */
const creates = { validationStatus: 422 as const, rateLimit: 'exportCreates' as const, readsOnly: true as const };
const reads = { validationStatus: 422 as const, rateLimit: 'exportReads' as const };
const errors = { 401: ErrorEnvelope, 422: ErrorEnvelope };
const EXPORT_ID_EXAMPLE = '3b1f6f7e-2c4d-4e8a-9b0c-7d6e5f4a3b2c';
const ExportId = Type.String({ format: 'uuid', examples: [EXPORT_ID_EXAMPLE] });

export const ExportResult = Type.Object(
  {
    data_export_id: ExportId,
    status: Type.Unsafe<'PENDING' | 'SUCCESS' | 'ERROR'>({ type: 'string', enum: ['PENDING', 'SUCCESS', 'ERROR'] }),
    result: Type.Array(Type.String({ format: 'uri' }), { description: 'Download links of the files, once SUCCESS.' }),
    created_at: Type.String({ format: 'date-time' }),
    finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    warn: Type.Record(Type.String(), Type.Unknown(), { description: 'Ignored options, why an export failed, and files_expired once its files were deleted.' }),
  },
  {
    // The export of the example request (src/exports/schema.ts), done: its one file's link expires 7 days after it finished.
    examples: [
      {
        data_export_id: EXPORT_ID_EXAMPLE,
        status: 'SUCCESS',
        result: [
          `https://tributary.example/v1/exports/files/${EXPORT_ID_EXAMPLE}/march_campaigns.csv?expires=1712650505&signature=3q2-7wY0n1Jd5kX8bQe4tVz6mLr9cHs2uFgA0iPoN7E`,
        ],
        created_at: '2024-04-02T08:15:03.412Z',
        finished_at: '2024-04-02T08:15:05.977Z',
        warn: {},
      },
    ],
  },
);

export const MetricList = Type.Object(
  { metrics: Type.Array(Type.Object({ id: Type.String(), label: Type.String(), definition: Type.String() })) },
  { examples: [{ metrics: [{ id: 'roas', label: 'ROAS', definition: 'rev ÷ spend.' }] }] },
);
export const BreakdownList = Type.Object(
  { breakdowns: Type.Array(Type.Object({ key: Type.String(), values: Type.Array(Type.String()) })) },
  {
    examples: [
      {
        breakdowns: [
          { key: 'platform', values: ['google', 'meta'] },
          { key: 'account', values: ['123-456-7890', 'act_1'] },
          { key: 'Platform (Northbeam)', values: ['google', 'meta'] },
        ],
      },
    ],
  },
);
export const AttributionModelList = Type.Object(
  { attribution_models: Type.Array(Type.Object({ id: Type.String(), name: Type.Union([Type.String(), Type.Null()]) })) },
  { examples: [{ attribution_models: [{ id: 'linear', name: 'Linear' }] }] },
);
const modelName = (id: string) => MODELS.find((model) => model.id === id)!.name;
/** Ours, then the hosted API's ids that exports take as aliases: a client that checks its ids against the list finds them. */
const MODEL_LIST = [
  ...MODELS.map(({ id, name }) => ({ id, name })),
  ...Object.entries(MODEL_ALIASES).map(([alias, id]) => ({ id: alias, name: `${modelName(id)} (alias of ${id})` })),
];

/** Create and poll exports, and the catalogs of what an export can hold. */
export const exportRoutes: FastifyPluginAsyncTypebox<{ signer: LinkSigner }> = async (app, { signer }) => {
  /** The links of a successful export, signed with the expiry fixed when it finished: polling again never extends them. */
  const downloadLinks = (job: ExportJob) => {
    const expires = Math.floor(Date.parse(job.links_expire_at!) / 1000);
    return job.files.map((file) => signer.link(job.export_id, file, expires));
  };

  app.post(
    '/data-export',
    {
      config: creates,
      schema: {
        summary: 'Create a data export',
        description: 'Starts an export; poll GET /v1/exports/data-export/result/{id} until it is SUCCESS or ERROR.',
        body: ExportRequest,
        response: { 201: Type.Object({ id: ExportId }, { examples: [{ id: EXPORT_ID_EXAMPLE }] }), ...errors },
      },
      // Asked before the schema, so that this answer comes instead of "property not allowed".
      preValidation: async (request) => {
        const body = request.body as Record<string, unknown> | null;
        const bucketFields = BUCKET_FIELDS.filter((field) => typeof body === 'object' && body !== null && field in body);
        if (bucketFields.length > 0) {
          throw invalidRequest(
            bucketFields.map((field) => ({
              loc: `body/${field}`,
              msg: 'This server does not deliver to external buckets: leave this out and download the files from the result URIs',
              type: 'not_supported',
            })),
            422,
          );
        }
      },
    },
    async (request, reply) => {
      // Planned now to find its problems and what it ignores; the worker plans it again in the
      // client's time zone, counting relative periods from the moment of creation.
      const planned = planExport(request.body, 'UTC', new Date());
      if ('problems' in planned) throw invalidRequest(planned.problems, 422);
      const { ignored } = planned.plan;
      const id = randomUUID();
      await request.store.exports.create(request.tenant, id, request.body, ignored.length > 0 ? { ignored } : {});
      return reply.code(201).send({ id });
    },
  );

  app.get(
    '/data-export/result/:export_id',
    {
      config: reads,
      schema: {
        summary: 'Fetch a data export result',
        description: 'PENDING until the export is done; then SUCCESS with signed download links (no credentials needed, they expire), or ERROR with the reason in warn.',
        params: Type.Object({ export_id: ExportId }),
        response: { 200: ExportResult, ...errors, 404: ErrorEnvelope },
      },
    },
    async (request) => {
      const job = await request.store.exports.find(request.tenant, request.params.export_id);
      if (!job) throw new ApiError(404, 'No export with this id');
      // Files deleted after their links expired (src/exports/retention.ts): said, not linked to.
      const expired = job.files_deleted_at !== null && {
        files_expired: `The files of this export were deleted at ${job.files_deleted_at}, after their links expired at ${job.links_expire_at}: create the export again`,
      };
      return {
        data_export_id: job.export_id,
        status: job.status,
        result: job.status === 'SUCCESS' && !expired ? downloadLinks(job) : [],
        created_at: job.created_at,
        finished_at: job.finished_at,
        warn: { ...job.warn, ...expired },
      };
    },
  );

  app.get(
    '/metrics',
    {
      config: reads,
      schema: {
        summary: 'Metrics an export can hold',
        description: 'Every metric id exports and reports take, aliases included, with its definition.',
        response: { 200: MetricList, 401: ErrorEnvelope },
      },
    },
    async () => ({ metrics: METRIC_CATALOG.map(({ id, label, definition }) => ({ id, label, definition })) }),
  );
  app.get(
    '/breakdowns',
    {
      config: reads,
      schema: {
        summary: "Breakdown keys, with the values found in this client's spend",
        description: 'The keys an export can split its rows by, each with the values of this client\'s spend records.',
        response: { 200: BreakdownList, 401: ErrorEnvelope },
      },
    },
    async (request) => ({ breakdowns: await request.store.breakdowns.list(request.tenant) }),
  );
  app.get(
    '/attribution-models',
    {
      config: reads,
      schema: {
        summary: 'Attribution models',
        description: [
          'The models exports and explanations credit orders by:\n',
          ...MODELS.map((model) => `- \`${model.id}\`: ${model.definition}`),
          '\nExports also take the hosted API\'s model ids, as aliases (their rows show the id asked):\n',
          ...Object.entries(MODEL_ALIASES).map(([alias, id]) => `- \`${alias}\`: \`${id}\``),
        ].join('\n'),
        response: { 200: AttributionModelList, 401: ErrorEnvelope },
      },
    },
    async () => ({ attribution_models: MODEL_LIST }),
  );
};

/** Downloads by signed link: no credentials, the signature is the permission. */
export const exportFileRoutes: FastifyPluginAsyncTypebox<{ signer: LinkSigner; exportsDir: string }> = async (app, { signer, exportsDir }) => {
  app.get(
    '/v1/exports/files/:export_id/:file',
    {
      config: { validationStatus: 422 },
      schema: {
        hide: true,
        params: Type.Object({ export_id: ExportId, file: Type.String({ pattern: '^[A-Za-z0-9_-]+\\.csv$' }) }),
        querystring: Type.Object({ expires: Type.Integer(), signature: Type.String() }, { additionalProperties: false }),
      },
    },
    async (request, reply) => {
      const { export_id, file } = request.params;
      const { expires, signature } = request.query;
      if (!signer.verify(export_id, file, expires, signature)) throw new ApiError(403, 'This link is not valid, or has expired');
      const stream = fs.createReadStream(path.join(exportDir(exportsDir, export_id), file));
      await new Promise((resolve, reject) => stream.once('open', resolve).once('error', reject)).catch(() => {
        throw new ApiError(404, 'This export file is gone');
      });
      return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${file}"`).send(stream);
    },
  );
};
