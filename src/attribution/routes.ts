import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError } from '../http/errors.js';
import { abandonedSignal } from '../http/abandoned.js';
import { ErrorEnvelope, Identifier } from '../http/schemas.js';
import { DEFAULT_MODEL, DEFAULT_WINDOW, MODEL_IDS, UNLIMITED, WINDOW_NAMES, windowNamed, type ModelId } from './models.js';


export const ExplanationQuery = Type.Object(
  {
    model: Type.Optional(
      Type.String({ enum: MODEL_IDS, default: DEFAULT_MODEL, 'x-messages': { enum: `Must be one of ${MODEL_IDS.join(', ')}` } }),
    ),
    window: Type.Optional(
      Type.String({
        enum: WINDOW_NAMES,
        default: String(DEFAULT_WINDOW),
        description: `Days of 24 hours, or ${UNLIMITED} for no lookback limit.`,
        'x-messages': { enum: `Must be one of ${WINDOW_NAMES.join(', ')}` },
      }),
    ),
  },
  { additionalProperties: false },
);

export const Explanation = Type.Object({
  order_id: Type.String(),
  customer_id: Type.String(),
  time_of_purchase: Type.String({ format: 'date-time', description: 'In UTC.' }),
  purchase_total: Type.Number(),
  currency: Type.String(),
  first_time: Type.Boolean({ description: "Whether this is the customer's first order ever (ties by time_of_purchase, then order_id)." }),
  model: Type.String(),
  window: Type.Union([Type.Integer(), Type.Literal(UNLIMITED)], { description: `Days, or ${UNLIMITED}.` }),
  unattributed: Type.Boolean({ description: 'The path is empty: the whole order is credited to unattributed.' }),
  touchpoints: Type.Array(
    Type.Object({
      touchpoint_id: Type.String(),
      occurred_at: Type.String({ format: 'date-time', description: 'In UTC.' }),
      type: Type.String(),
      channel: Type.String(),
      platform_name: Type.String(),
      campaign_id: Type.String(),
      adset_id: Type.String(),
      ad_id: Type.String(),
      credit: Type.Number({ description: 'Its share of the order, exact to 9 decimal places; the credits of an order add up to exactly 1.' }),
      revenue: Type.Number({ description: 'credit × purchase_total, rounded to 6 decimal places.' }),
    }),
    { description: 'The path, by occurred_at then touchpoint_id.' },
  ),
});

/** Why an order is credited as it is: GET /v2/orders/{order_id}/attribution. */
export const attributionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:order_id/attribution',
    {
      config: { validationStatus: 422 },
      schema: {
        summary: "Explain an order's attribution",
        description: `The order's path under a model and window (by default ${DEFAULT_MODEL} and ${DEFAULT_WINDOW} days), each touchpoint with its credit and revenue: what exports count for this order.`,
        params: Type.Object({ order_id: Type.String({ ...Identifier('The order.'), examples: ['1001'] }) }),
        querystring: ExplanationQuery,
        response: { 200: Explanation, 401: ErrorEnvelope, 404: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const { model = DEFAULT_MODEL, window = String(DEFAULT_WINDOW) } = request.query;
      const explanation = await request.store.explainer.explain(request.tenant, request.params.order_id, model as ModelId, windowNamed(window), abandonedSignal(reply));
      if (explanation === undefined) throw new ApiError(404, 'No order with this id');
      return reply.type('application/json').send(explanation as never);
    },
  );
};
