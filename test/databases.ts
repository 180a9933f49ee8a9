/**
 * New, empty databases of their own for the test suite and the benchmarks: on a PostgreSQL
 * server, or on a Citus coordinator and every one of its workers (docs/scaling.md, "Tested on Citus").
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Where a database is made: a PostgreSQL server, or a Citus coordinator (`citus`) and its nodes. */
export interface DatabaseServer {
  url: string;
  citus: boolean;
}

export interface ScratchDatabase {
  /** The connection string of the new database. */
  url: string;
  /** Drops the database, on every node of a Citus cluster. */
  drop(): Promise<void>;
}

async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A node of a Citus cluster, as pg_dist_node names it. */
interface ClusterNode {
  name: string;
  port: number;
}

const inDatabase = (url: string, name: string, host?: ClusterNode) => {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  if (host) [copy.hostname, copy.port] = [host.name, String(host.port)];
  return copy.toString();
};

/** The advisory lock key under which a test database is made on a Citus coordinator. */
const MAKING_A_CITUS_DATABASE = 7_310_427;

/**
 * Creates database `name` on the coordinator of `coordinatorUrl` and on its workers, with the
 * citus extension in each and the same nodes as `coordinatorUrl`'s database: a fresh Citus cluster's database.
 * Returns its workers.
 */
async function createCitusDatabase(coordinatorUrl: string, name: string): Promise<ClusterNode[]> {
  return onServer(coordinatorUrl, async (admin) => {
    // One database made at a time, by the suite's concurrent files: adding the nodes to two at once
    // had both update the role that owns them on a worker, and one failed ("tuple concurrently
    // updated"). The lock is the admin connection's, released when it closes.
    await admin.query('SELECT pg_advisory_lock($1)', [MAKING_A_CITUS_DATABASE]);
    await admin.query('SET citus.enable_create_database_propagation = on');
    await admin.query(`CREATE DATABASE ${name}`);
    const nodes = (
      await admin.query<ClusterNode & { coordinator: boolean }>(
        `SELECT nodename AS name, nodeport AS port, groupid = 0 AS coordinator FROM pg_dist_node WHERE noderole = 'primary' ORDER BY nodeid`,
      )
    ).rows;
    const workers = nodes.filter((node) => !node.coordinator);
    for (const worker of workers) await onServer(inDatabase(coordinatorUrl, name, worker), (c) => c.query('CREATE EXTENSION citus'));
    await onServer(inDatabase(coordinatorUrl, name), async (c) => {
      await c.query('CREATE EXTENSION citus');
      const coordinator = nodes.find((node) => node.coordinator);
      if (coordinator) await c.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.name, coordinator.port]);
      for (const worker of workers) await c.query('SELECT citus_add_node($1, $2)', [worker.name, worker.port]);
    });
    return workers;
  });
}

/** Drops database `name` of the server of `url`, not propagated by Citus (its default). */
async function dropDatabase(url: string, name: string): Promise<void> {
  await onServer(url, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/**
 * Drops database `name` of a Citus cluster: on each worker, one after the other, then on the coordinator.
 *
 * Not with one DROP propagated from the coordinator (citus.enable_create_database_propagation):
 * that drops the coordinator's database first and holds its lock while it sends the DROP to the
 * workers. A worker's maintenance daemon, whose distributed deadlock detection queries every node's
 * database every 2 s, could then be reconnecting to the coordinator's, waiting on that lock; it
 * leaves only once connected, so the worker's DROP … WITH (FORCE) waited 5 s for it and was
 * refused ("is being accessed by other users"). Dropped on one node at a time, no node's DROP
 * waits on another's. Each node's DROP also removes the database from that node's pg_dist_object.
 */
async function dropCitusDatabase(coordinatorUrl: string, name: string, workers: ClusterNode[]): Promise<void> {
  const admin = decodeURIComponent(new URL(coordinatorUrl).pathname.slice(1));
  for (const worker of workers) await dropWhenLeft(inDatabase(coordinatorUrl, admin, worker), name);
  await dropWhenLeft(coordinatorUrl, name);
}

/** PostgreSQL's "database … is being accessed by other users": a session it could not end in 5 s. */
const OBJECT_IN_USE = '55006';

/**
 * Drops database `name` of a Citus node, trying again while it is refused for a session it could
 * not end: Citus's maintenance daemon of each node connects to every database with the extension
 * (its distributed deadlock detection, every 2 s), and a DROP meeting one of its connections was
 * refused now and then under load, failing a test file that had passed.
 */
async function dropWhenLeft(url: string, name: string, attempts = 10): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await dropDatabase(url, name);
    } catch (error) {
      if ((error as { code?: string }).code !== OBJECT_IN_USE || attempt === attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** A new, empty database named `<prefix>_<random hex>` on `server`, unmigrated. */
export async function createScratchDatabase(server: DatabaseServer, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  if (server.citus) {
    const workers = await createCitusDatabase(server.url, name);
    return { url: inDatabase(server.url, name), drop: () => dropCitusDatabase(server.url, name, workers) };
  }
  await onServer(server.url, (admin) => admin.query(`CREATE DATABASE ${name}`));
  return { url: inDatabase(server.url, name), drop: () => dropDatabase(server.url, name) };
}
