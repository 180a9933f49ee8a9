-- The data-driven attribution models (src/attribution/learning/): what each client's models
-- learnt, and the client's settings of them.
--
-- attribution_learnt_models: per client, environment, model, window, settings and training
--   period, the weights its credits are shared by (`weights`: state → integer parts, the largest a
--   billion) and what GET /v1/attribution/models/{id} answers of it (`learnt`). Training takes
--   seconds on a large shop, and every export, report and explanation of a period asks the same,
--   so it is kept and reused until it is 15 minutes old (learning/training.ts); rows not asked
--   for a day are deleted by the next training. The window is text: a number of days, or
--   'infinity'. markov_order is 0 for models other than markov.
-- clients.channel_grouping, training_days, markov_order: the client's settings (admin API).

CREATE TABLE attribution_learnt_models (
  client_id          uuid NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
  environment        environment NOT NULL,
  model              text NOT NULL,
  attribution_window text NOT NULL,
  channel_grouping   text NOT NULL,
  markov_order       int NOT NULL,
  trained_from       timestamptz NOT NULL,
  trained_before     timestamptz NOT NULL,
  computed_at        timestamptz NOT NULL,
  weights            jsonb NOT NULL,
  learnt             jsonb NOT NULL,
  PRIMARY KEY (client_id, environment, model, attribution_window, channel_grouping, markov_order, trained_from, trained_before)
);

ALTER TABLE clients
  ADD COLUMN channel_grouping text NOT NULL DEFAULT 'platform' CHECK (channel_grouping IN ('platform', 'platform_campaign')),
  ADD COLUMN training_days int NOT NULL DEFAULT 90 CHECK (training_days BETWEEN 1 AND 730),
  ADD COLUMN markov_order int NOT NULL DEFAULT 1 CHECK (markov_order BETWEEN 1 AND 4);
