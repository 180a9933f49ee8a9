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

const inDatabase = (url: string, name: string, host?: { name: string; port: number }) => {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  if (host) [copy.hostname, copy.port] = [host.name, String(host.port)];
  return copy.toString();
};

/**
 * Creates database `name` on the coordinator of `coordinatorUrl` and on its workers, with the
 * citus extension in each and the same nodes as `coordinatorUrl`'s database: a fresh Citus cluster's database.
 */
async function createCitusDatabase(coordinatorUrl: string, name: string): Promise<void> {
  const nodes = await onServer(coordinatorUrl, async (admin) => {
    await admin.query('SET citus.enable_create_database_propagation = on');
    await admin.query(`CREATE DATABASE ${name}`);
    return (
      await admin.query<{ name: string; port: number; coordinator: boolean }>(
        `SELECT nodename AS name, nodeport AS port, groupid = 0 AS coordinator FROM pg_dist_node WHERE noderole = 'primary' ORDER BY nodeid`,
      )
    ).rows;
  });
  const workers = nodes.filter((node) => !node.coordinator);
  for (const worker of workers) await onServer(inDatabase(coordinatorUrl, name, worker), (c) => c.query('CREATE EXTENSION citus'));
  await onServer(inDatabase(coordinatorUrl, name), async (c) => {
    await c.query('CREATE EXTENSION citus');
    const coordinator = nodes.find((node) => node.coordinator);
    if (coordinator) await c.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.name, coordinator.port]);
    for (const worker of workers) await c.query('SELECT citus_add_node($1, $2)', [worker.name, worker.port]);
  });
}

/** A new, empty database named `<prefix>_<random hex>` on `server`, unmigrated. */
export async function createScratchDatabase(server: DatabaseServer, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  if (server.citus) await createCitusDatabase(server.url, name);
  else await onServer(server.url, (admin) => admin.query(`CREATE DATABASE ${name}`));
  return {
    url: inDatabase(server.url, name),
    drop: () =>
      onServer(server.url, async (admin) => {
        // As CREATE DATABASE was, the DROP is propagated to every node.
        if (server.citus) await admin.query('SET citus.enable_create_database_propagation = on');
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }),
  };
}
