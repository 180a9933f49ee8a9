import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError } from '../http/errors.js';
import { abandonedSignal } from '../http/abandoned.js';
import { ErrorEnvelope, Identifier } from '../http/schemas.js';
import { CHANNEL_GROUPINGS } from './learning/grouping.js';
import { CONVERSION, MARKOV_ORDERS, NULL, START } from './learning/markov.js';
import { FEW_CONVERSIONS } from './learning/training.js';
import { DATA_DRIVEN_MODELS, DEFAULT_MODEL, DEFAULT_WINDOW, isDataDriven, MODEL_IDS, MODELS, UNLIMITED, WINDOW_NAMES, windowNamed, type ModelId } from './models.js';


const Window = Type.Optional(
  Type.String({
    enum: WINDOW_NAMES,
    default: String(DEFAULT_WINDOW),
    description: `Days of 24 hours, or ${UNLIMITED} for no lookback limit.`,
    'x-messages': { enum: `Must be one of ${WINDOW_NAMES.join(', ')}` },
    examples: ['30'],
  }),
);
/** period_from, with an example where the operation's example asks a data-driven model. */
const PeriodFrom = (fallback: string, example?: string) =>
  Type.Optional(
    Type.String({
      format: 'date',
      description: `markov and shapley: the first day (in the client's time zone) of the period whose credits are asked; they learn from the client's training_days before it. Default: ${fallback}.`,
      ...(example && { examples: [example] }),
    }),
  );

export const ExplanationQuery = Type.Object(
  {
    model: Type.Optional(
      Type.String({ enum: MODEL_IDS, default: DEFAULT_MODEL, 'x-messages': { enum: `Must be one of ${MODEL_IDS.join(', ')}` }, examples: ['linear'] }),
    ),
    window: Window,
    period_from: PeriodFrom('the day of the purchase'),
  },
  { additionalProperties: false },
);

const TrainingPeriod = Type.Object(
  { from: Type.String({ format: 'date-time' }), before: Type.String({ format: 'date-time' }) },
  { description: 'The instants the training period starts at and ends before.' },
);
const FewConversions = Type.Union([Type.String(), Type.Null()], {
  description: `Said when fewer than ${FEW_CONVERSIONS} orders of the training period had a path: the weights may be chance.`,
});

/** The explanation of the order of the examples (src/orders/schema.ts) under the linear model: its two visits (src/touchpoints/schema.ts), half each. */
const EXPLANATION_EXAMPLE = {
  order_id: '1001',
  customer_id: 'cust-9',
  time_of_purchase: '2024-03-08T09:23:45.000Z',
  purchase_total: 99.99,
  currency: 'USD',
  first_time: true,
  model: 'linear',
  window: 30,
  unattributed: false,
  touchpoints: [
    { touchpoint_id: 'tp-1', occurred_at: '2024-03-06T14:02:00.000Z', type: 'visit', channel: 'paid', platform_name: 'meta', campaign_id: 'spring', adset_id: '', ad_id: '', credit: 0.5, revenue: 49.995 },
    { touchpoint_id: 'tp-2', occurred_at: '2024-03-08T09:12:00.000Z', type: 'visit', channel: 'organic_search', platform_name: '', campaign_id: '', adset_id: '', ad_id: '', credit: 0.5, revenue: 49.995 },
  ],
};

export const Explanation = Type.Object(
  {
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
        state: Type.Optional(Type.String({ description: 'markov and shapley: its channel grouping, the state the model weighs.' })),
        channel_weight: Type.Optional(
          Type.Number({ description: "markov and shapley: the weight its state learnt (the largest 1). The path's credit is shared among its states by these weights, equally among a state's touchpoints." }),
        ),
      }),
      { description: 'The path, by occurred_at then touchpoint_id.' },
    ),
    learnt: Type.Optional(
      Type.Object(
        { training: TrainingPeriod, computed_at: Type.String({ format: 'date-time' }), channel_grouping: Type.String(), warning: FewConversions },
        { description: 'markov and shapley: what their weights were learnt from (GET /v1/attribution/models/{model_id} shows them whole).' },
      ),
    ),
  },
  { examples: [EXPLANATION_EXAMPLE] },
);

const LearntModel = Type.Object({
  model: Type.String(),
  window: Type.Union([Type.Integer(), Type.Literal(UNLIMITED)]),
  channel_grouping: Type.String({ enum: CHANNEL_GROUPINGS }),
  markov_order: Type.Optional(Type.Integer({ enum: MARKOV_ORDERS, description: 'markov: the order of the chain; a state is the last markov_order channels.' })),
  training: TrainingPeriod,
  computed_at: Type.String({ format: 'date-time', description: 'When it was learnt; learnt again when asked 15 minutes later.' }),
  paths: Type.Object(
    { converting: Type.Integer(), not_converting: Type.Integer() },
    { description: "The orders of the training period with a path, and the customers (or unlinked visitors) whose visits of it are in no order's path." },
  ),
  conversion_probability: Type.Optional(Type.Number({ description: `markov: the probability that a path from ${START} reaches ${CONVERSION}.` })),
  channels: Type.Array(
    Type.Object({
      channel: Type.String({ description: 'A state: its channel grouping.' }),
      removal_effect: Type.Optional(Type.Number({ description: 'markov: the share of conversions lost when the chain loses this state.' })),
      shapley_value: Type.Optional(Type.Number({ description: 'shapley: its Shapley value; may be negative.' })),
      weight: Type.Number({ description: 'What credits are shared by: its effect or value over the largest one, 0 when negative.' }),
    }),
  ),
  transitions: Type.Optional(
    Type.Array(Type.Object({ from: Type.String(), to: Type.String(), count: Type.Integer(), probability: Type.Number() }), {
      description: `markov: every transition seen, between ${START}, the states (of order k, the last k channels joined by ' > '), ${CONVERSION} and ${NULL}.`,
    }),
  ),
  coalitions: Type.Optional(
    Type.Array(Type.Object({ channels: Type.Array(Type.String()), converting: Type.Integer(), paths: Type.Integer(), value: Type.Number() }), {
      description: 'shapley: every set of channels that some path has exactly, and its value: the conversion rate of those paths.',
    }),
  ),
  warning: FewConversions,
});

export const AttributionModelQuery = Type.Object({ window: Window, period_from: PeriodFrom("today's", '2024-03-01') }, { additionalProperties: false });

/** A model as the API shows it, without what it learnt. */
const described = (id: ModelId) => {
  const { name, definition } = MODELS.find((model) => model.id === id)!;
  return { id, name, definition, data_driven: isDataDriven(id) };
};

export const AttributionModel = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    definition: Type.String(),
    data_driven: Type.Boolean({ description: "Whether it learns from the client's paths (markov, shapley)." }),
    learnt: Type.Optional(
      Type.Union([LearntModel, Type.Null()], { description: 'Data-driven models: what was learnt for the window and period asked; null for the UAT test credentials, which keep no paths.' }),
    ),
  },
  {
    examples: [
      {
        ...described('markov'),
        // Learnt for a period from 2024-03-01 in the client's zone (America/New_York), over the 90 days before it.
        learnt: {
          model: 'markov',
          window: 30,
          channel_grouping: 'platform',
          markov_order: 1,
          training: { from: '2023-12-02T05:00:00.000Z', before: '2024-03-01T05:00:00.000Z' },
          computed_at: '2024-03-05T14:12:40.118Z',
          paths: { converting: 4210, not_converting: 88512 },
          conversion_probability: 0.045405,
          channels: [
            { channel: 'google', removal_effect: 0.61, weight: 1 },
            { channel: 'meta', removal_effect: 0.366, weight: 0.6 },
            { channel: 'organic_search', removal_effect: 0.183, weight: 0.3 },
          ],
          // The first of every transition seen: those from (start).
          transitions: [
            { from: START, to: 'meta', count: 51230, probability: 0.552512 },
            { from: START, to: 'google', count: 29870, probability: 0.322146 },
            { from: START, to: 'organic_search', count: 11622, probability: 0.125342 },
          ],
          warning: null,
        },
      },
    ],
  },
);


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
      const { model = DEFAULT_MODEL, window = String(DEFAULT_WINDOW), period_from: periodFrom } = request.query;
      const asked = { model: model as ModelId, window: windowNamed(window), periodFrom };
      const explanation = await request.store.explainer.explain(request.tenant, request.params.order_id, asked, abandonedSignal(reply));
      if (explanation === undefined) throw new ApiError(404, 'No order with this id');
      return reply.type('application/json').send(explanation as never);
    },
  );
};

/** The attribution models, and what the data-driven ones learnt: GET /v1/attribution/models[/{model_id}]. */
export const attributionModelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/models',
    {
      schema: {
        summary: 'List the attribution models',
        description: 'Every model an export, report or explanation takes, with its definition.',
        response: { 200: Type.Object({ models: Type.Array(AttributionModel) }, { examples: [{ models: MODEL_IDS.map(described) }] }), 401: ErrorEnvelope },
      },
    },
    async () => ({ models: MODEL_IDS.map(described) }),
  );

  app.get(
    '/models/:model_id',
    {
      config: { validationStatus: 422 },
      schema: {
        summary: 'Show an attribution model, and what a data-driven one learnt',
        description: [
          `For ${DATA_DRIVEN_MODELS.join(' and ')}: what was learnt from the client's paths of the training period before period_from, for the window asked:`,
          'the transitions of the chain or the values of the sets of channels, each channel\'s removal effect or Shapley value, and the weights credits are shared by.',
          'Learnt when asked, if not learnt in the last 15 minutes.',
        ].join(' '),
        params: Type.Object({
          model_id: Type.String({ enum: MODEL_IDS, 'x-messages': { enum: `Must be one of ${MODEL_IDS.join(', ')}` }, examples: ['markov'] }),
        }),
        querystring: AttributionModelQuery,
        response: { 200: AttributionModel, 401: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      const id = request.params.model_id as ModelId;
      if (!isDataDriven(id)) return described(id);
      const { window = String(DEFAULT_WINDOW), period_from: periodFrom } = request.query;
      const learnt = await request.store.explainer.learnt(request.tenant, id, windowNamed(window), periodFrom, abandonedSignal(reply));
      return { ...described(id), learnt: learnt ?? null };
    },
  );
};
