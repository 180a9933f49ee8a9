import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { once } from 'node:events';
import http from 'node:http';
import { test } from 'node:test';
import { freePort } from '../bench/server.js';
import { random } from '../bench/generate.js';
import { ADMIN_TOKEN, createChildStore, minimalOrder, serverUrl, startCli } from './helpers.js';

// Several server processes over one store, one after the other, each killed: PostgreSQL only
// (an embedded store killed in the middle of a write is another matter, and another test's).
const postgres = Boolean(serverUrl);

const ROUNDS = 7; // kill/restart rounds
const CONNECTIONS = 3; // concurrent client connections
const KILL_AFTER_MS = [100, 1500] as const; // how long a server serves before it is killed
const SEED = Number(process.env.DURABILITY_SEED ?? 20_240_308);

type Alias = { type: string; id: string };

/**
 * Version `version` of order `orderId` (the `n`th order made): every field says which version it
 * is, so a stored body is exactly one version or corrupt. A version's aliases include those of the
 * versions before it, as a client sending the order again would.
 */
function orderVersion(orderId: string, n: number, version: number): Record<string, unknown> {
  const aliases: Alias[] = [];
  if (n % 3 === 0) aliases.push({ type: 'shopify', id: `gid-${orderId}` });
  if (n % 5 === 0) aliases.push({ type: 'custom:erp', id: `erp-${orderId}` });
  for (let v = 2; v <= version; v++) if ((n + v) % 2 === 0) aliases.push({ type: 'custom:version', id: `${orderId}-v${v}` });
  return minimalOrder(orderId, {
    customer_id: `customer-${orderId}-v${version}`,
    customer_name: `Customer version ${version}`,
    time_of_purchase: new Date(Date.UTC(2024, 2, 8, version, n % 60, n % 59)).toISOString(),
    purchase_total: 10 + version + (n % 100) / 100,
    tax: version / 10,
    shipping_cost: version,
    order_tags: [`v${version}`],
    products: [
      { id: 'p', name: `Product version ${version}`, quantity: version, price: 10 + version },
      { id: 'q', name: 'Other product', quantity: 1, price: 0.99, variant_id: `variant-v${version}` },
    ],
    ...(n % 4 === 0
      ? { refunds: [{ product_id: 'p', quantity: 1, refund_amount: version + 0.25, refund_cost: 0.5, refund_made_at: `2024-03-1${version % 10}T12:00:00Z` }] }
      : {}),
    ...(aliases.length > 0 ? { alternate_order_ids: aliases } : {}),
  });
}

/** What the store keeps of an order version: its body (less its aliases) and its aliases. */
function stored(order: Record<string, unknown>): { body: unknown; aliases: string[] } {
  const { alternate_order_ids, ...body } = order;
  return {
    body: JSON.parse(JSON.stringify(body)),
    aliases: ((alternate_order_ids ?? []) as Alias[]).map((alias) => `${alias.type} ${alias.id}`).sort(),
  };
}

type Outcome = 'pending' | 'ok' | 'rejected' | 'refused' | 'unanswered';

interface Batch {
  id: number;
  kind: 'insert' | 'update';
  round: number;
  /** The orders of the batch, each at the version it sends. */
  entries: { orderId: string; version: number }[];
  outcome: Outcome;
  status?: number;
  answer?: string;
}

interface OrderRecord {
  n: number;
  /** The versions sent, in order: version v is versions[v - 1]. */
  versions: { body: unknown; aliases: string[] }[];
}

/** POSTs `body` on `agent`'s connection: the answer, or how it failed. */
function post(agent: http.Agent, port: number, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; text: string } | { error: string }>((resolve) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v2/orders',
        agent,
        timeout: 30_000,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve(response.complete ? { status: response.statusCode!, text } : { error: 'truncated answer' }));
        response.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer in 30 s')));
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    request.end(body);
  });
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test(
  'a server killed (SIGKILL) at random moments under a stream of batches stores each batch whole or not at all',
  { skip: !postgres && 'PostgreSQL only: set DATABASE_URL', timeout: 180_000 },
  async (t) => {
    const started = Date.now();
    // Kill times from their own generator: the batches drawn depend on how fast the server is.
    const killRng = random(SEED);
    const rng = random(SEED + 1);
    const between = (low: number, high: number, from = rng) => low + Math.floor(from() * (high - low + 1));
    const store = await createChildStore();
    const port = await freePort();
    // The test writes tens of megabytes a minute: the rate limit on order writes is not what it tests.
    const env = { ...store.env, PORT: String(port), UAT_PORT: String(await freePort()), ADMIN_TOKEN, LOG_LEVEL: 'info', ORDER_WRITE_BYTES_PER_MINUTE: '0' };
    let server: ChildProcess | undefined;

    const batches: Batch[] = [];
    const orders = new Map<string, OrderRecord>();
    /** Orders whose stored version is known (their last batch was answered 200) and that no batch in flight holds. */
    const updatable: string[] = [];
    let ordersMade = 0;

    /** The next batch: mostly new orders; sometimes new versions of known orders, with a few new ones. */
    function nextBatch(round: number): { batch: Batch; json: string } {
      const kind = updatable.length >= 100 && rng() < 0.4 ? 'update' : 'insert';
      const batch: Batch = { id: batches.length, kind, round, entries: [], outcome: 'pending' };
      const size = between(200, 1000);
      if (kind === 'update') {
        const count = Math.min(size, updatable.length, between(100, 600));
        for (let i = 0; i < count; i++) {
          const [orderId] = updatable.splice(Math.floor(rng() * updatable.length), 1);
          batch.entries.push({ orderId: orderId!, version: orders.get(orderId!)!.versions.length + 1 });
        }
      }
      while (batch.entries.length < size) batch.entries.push({ orderId: `b${batch.id}-o${batch.entries.length}`, version: 1 });
      const sent = batch.entries.map(({ orderId, version }) => {
        let record = orders.get(orderId);
        if (!record) orders.set(orderId, (record = { n: ordersMade++, versions: [] }));
        const order = orderVersion(orderId, record.n, version);
        record.versions.push(stored(order));
        assert.equal(record.versions.length, version);
        return order;
      });
      batches.push(batch);
      return { batch, json: JSON.stringify(sent) };
    }

    /** One client connection: posts batches one after the other until the round ends. */
    async function connection(round: number, headers: Record<string, string>, serving: { up: boolean }) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        while (serving.up) {
          const { batch, json } = nextBatch(round);
          const answer = await post(agent, port, headers, json);
          if ('error' in answer) {
            // Refused: the connection was never made, so the batch never reached the server.
            batch.outcome = answer.error === 'ECONNREFUSED' ? 'refused' : 'unanswered';
            batch.answer = answer.error;
            break;
          }
          batch.status = answer.status;
          batch.answer = answer.text.slice(0, 500);
          batch.outcome = answer.status === 200 ? 'ok' : 'rejected';
          if (batch.outcome === 'ok') updatable.push(...batch.entries.map((entry) => entry.orderId));
        }
      } finally {
        agent.destroy();
      }
    }

    try {
      let headers: Record<string, string> | undefined;
      const kills: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        server = await startCli('serve', env, 'tributary is ready');
        if (!headers) {
          const created = await fetch(`http://127.0.0.1:${port}/admin/v1/clients`, {
            method: 'POST',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'durability' }),
          });
          assert.equal(created.status, 201);
          const client = (await created.json()) as { client_id: string; api_key: string };
          headers = { authorization: client.api_key, 'data-client-id': client.client_id };
        }
        const serving = { up: true };
        const clients = Array.from({ length: CONNECTIONS }, () => connection(round, headers!, serving));
        const killAfter = between(...KILL_AFTER_MS, killRng);
        kills.push(killAfter);
        await sleep(killAfter);
        serving.up = false;
        server.kill('SIGKILL');
        await exited(server);
        await Promise.all(clients);
      }

      // The service still works after all that, and stops cleanly.
      server = await startCli('serve', env, 'tributary is ready');
      const last = nextBatch(ROUNDS);
      const agent = new http.Agent({ keepAlive: false });
      const answer = await post(agent, port, headers!, last.json);
      assert.ok('status' in answer && answer.status === 200, JSON.stringify(answer));
      last.batch.outcome = 'ok';
      server.kill('SIGTERM');
      await exited(server);
      assert.equal(server.exitCode, 0);

      // Backends of killed servers finish (and roll back) their last statement on their own time.
      // Client backends only: on Citus the database also has the maintenance daemon, whose state is
      // always null, and the connections it opens for its own checks (citus_internal).
      await store.withStore(async (db) => {
        for (const deadline = Date.now() + 15_000; ; ) {
          const [busy] = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                AND application_name NOT LIKE 'citus_internal%' AND state IS DISTINCT FROM 'idle'`,
          );
          if (busy!.n === 0) break;
          assert.ok(Date.now() < deadline, `${busy!.n} backends of killed servers still busy`);
          await sleep(100);
        }
      });

      const clientId = headers!['data-client-id']!;
      const { rows, aliasRows, uat } = await store.withStore(async (db) => ({
        rows: await db.query<{ order_id: string; body: unknown; time_of_purchase: string; customer_id: string; purchase_total: string; refunds: unknown }>(
          `SELECT order_id, body, utc_iso(time_of_purchase) AS time_of_purchase, customer_id, purchase_total::text AS purchase_total, refunds
             FROM orders WHERE client_id = $1 AND environment = 'production'`,
          [clientId],
        ),
        aliasRows: await db.query<{ order_id: string; alias: string }>(
          `SELECT order_id, alias_type || ' ' || alias_id AS alias FROM order_aliases WHERE client_id = $1 AND environment = 'production'`,
          [clientId],
        ),
        uat: await db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM orders WHERE environment = 'uat') + (SELECT count(*) FROM order_aliases WHERE environment = 'uat') AS n`,
        ),
      }));
      assert.equal(Number(uat[0]!.n), 0, 'nothing reached the UAT environment');

      const aliasesOf = new Map<string, string[]>();
      for (const { order_id, alias } of aliasRows) aliasesOf.set(order_id, [...(aliasesOf.get(order_id) ?? []), alias]);

      // Which version of each order is stored: its body, columns and aliases must be those of exactly one version.
      const storedVersion = new Map<string, number>();
      const corrupt: string[] = [];
      for (const row of rows) {
        const record = orders.get(row.order_id);
        const version = record ? record.versions.findIndex((sent) => isDeepStrictEqual(sent.body, row.body)) + 1 : 0;
        const sent = record?.versions[version - 1];
        const body = row.body as Record<string, unknown>;
        const aliases = (aliasesOf.get(row.order_id) ?? []).sort();
        if (
          !sent ||
          !isDeepStrictEqual(aliases, sent.aliases) ||
          row.time_of_purchase !== body.time_of_purchase ||
          row.customer_id !== body.customer_id ||
          Number(row.purchase_total) !== body.purchase_total ||
          !isDeepStrictEqual(row.refunds ?? undefined, body.refunds)
        ) {
          corrupt.push(`${row.order_id}: ${JSON.stringify({ row, aliases, sent })}`);
        } else {
          storedVersion.set(row.order_id, version);
        }
      }
      assert.equal(aliasRows.filter((alias) => !storedVersion.has(alias.order_id) && !orders.has(alias.order_id)).length, 0);

      // A batch's entry is applied when its order is stored at its version or a later one: a
      // later one is only ever sent once this one was answered 200.
      const partial: string[] = [];
      const lost: string[] = [];
      const unexpected: string[] = [];
      let complete = 0;
      let unansweredComplete = 0;
      let unansweredAbsent = 0;
      for (const batch of batches) {
        const applied = batch.entries.filter(({ orderId, version }) => (storedVersion.get(orderId) ?? 0) >= version).length;
        const state = applied === batch.entries.length ? 'complete' : applied === 0 ? 'absent' : 'partial';
        const what = `batch ${batch.id} (${batch.kind}, round ${batch.round}, ${batch.outcome} ${batch.status ?? batch.answer ?? ''}): ${applied} of ${batch.entries.length} orders applied`;
        if (state === 'complete') complete++;
        if (state === 'partial') partial.push(what);
        if (batch.outcome === 'ok' && state === 'absent') lost.push(what);
        if (batch.outcome !== 'ok' && batch.outcome !== 'unanswered' && state !== 'absent') unexpected.push(what);
        if (batch.outcome === 'unanswered' && state === 'complete') unansweredComplete++;
        if (batch.outcome === 'unanswered' && state === 'absent') unansweredAbsent++;
      }

      const count = (outcome: Outcome) => batches.filter((batch) => batch.outcome === outcome).length;
      const versions = [...storedVersion.values()];
      t.diagnostic(`seed ${SEED}, ${ROUNDS} kill/restart rounds after ${kills.join(', ')} ms, ${CONNECTIONS} connections, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      t.diagnostic(
        `batches sent: ${batches.length} (${batches.filter((b) => b.kind === 'update').length} updating known orders), ` +
          `${batches.reduce((sum, b) => sum + b.entries.length, 0)} orders`,
      );
      t.diagnostic(`answered 200: ${count('ok')}, answered otherwise: ${count('rejected')}, refused: ${count('refused')}`);
      t.diagnostic(`killed in flight (no answer): ${count('unanswered')}, of which stored complete: ${unansweredComplete}, absent: ${unansweredAbsent}`);
      t.diagnostic(`stored complete: ${complete}, stored partially: ${partial.length}, lost (200 but absent): ${lost.length}`);
      t.diagnostic(
        `orders stored: ${rows.length} (${versions.filter((v) => v > 1).length} updated), aliases: ${aliasRows.length}, ` +
          `corrupt or half-updated: ${corrupt.length}`,
      );

      assert.deepEqual(corrupt.slice(0, 5), [], 'every stored order is exactly one version sent, with its aliases');
      assert.deepEqual(partial, [], 'no batch is stored in part');
      assert.deepEqual(lost, [], 'every batch answered 200 is stored');
      assert.deepEqual(unexpected, [], 'a batch refused or answered with an error is not stored');
      assert.equal(count('rejected'), 0, `batches answered with an error: ${batches.filter((b) => b.outcome === 'rejected').map((b) => b.answer)}`);
      assert.ok(count('ok') >= 2, 'batches went through');
      assert.ok(count('unanswered') > 0, 'some batches were in flight when the server was killed');
    } finally {
      if (server && server.exitCode === null && server.signalCode === null) {
        server.kill('SIGKILL');
        await exited(server);
      }
      await store.cleanup();
    }
  },
);
