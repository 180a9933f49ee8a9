import type { LearningSettings } from '../attribution/index.js';
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import { generateApiKey, hashSecret, type KeyScope } from './api-keys.js';

export interface Client {
  client_id: string;
  name: string;
  time_zone: string;
  /** ISO-8601, UTC. */
  created_at: string;
}

/**
 * A client as the admin API shows it: with its source mapping, the origins its pixel events may
 * come from, and its settings of the data-driven attribution models.
 */
export interface ClientDetails extends Client, LearningSettings {
  source_platforms: Record<string, string>;
  collect_origins: string[];
}

export interface IssuedKey {
  api_key: string;
  key_id: string;
  scope: KeyScope;
}

const CLIENT = 'client_id, name, time_zone, utc_iso(created_at) AS created_at';
/** The zone of a client that never set one (the column's default). */
const DEFAULT_TIME_ZONE = 'UTC';
const CLIENT_DETAILS = `${CLIENT}, source_platforms, collect_origins, channel_grouping, training_days, markov_order`;

function knownToNode(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return true;
  } catch {
    return false;
  }
}

const jsonOrNull = (value: object | undefined) => (value === undefined ? null : JSON.stringify(value));

export type ClientRepository = ReturnType<typeof createClientRepository>;

export function createClientRepository(db: Database) {
  async function issueKey(sql: Queryable, clientId: string, scope: KeyScope): Promise<IssuedKey> {
    const key: IssuedKey = { api_key: generateApiKey(), key_id: randomUUID(), scope };
    await sql.query('INSERT INTO api_keys (client_id, key_id, key_hash, scope) VALUES ($1, $2, $3, $4)', [
      clientId,
      key.key_id,
      hashSecret(key.api_key),
      scope,
    ]);
    return key;
  }

  return {
    /** Creates a client together with its first API key, which writes. */
    create(name: string): Promise<Client & IssuedKey> {
      return db.transaction(async (tx) => {
        const [client] = await tx.query<Client>(
          `INSERT INTO clients (client_id, name) VALUES ($1, $2) RETURNING ${CLIENT}`,
          [randomUUID(), name],
        );
        return { ...client!, ...(await issueKey(tx, client!.client_id, 'write')) };
      });
    },

    list(): Promise<Client[]> {
      return db.query<Client>(`SELECT ${CLIENT} FROM clients ORDER BY clients.created_at, client_id`);
    },

    async find(clientId: string): Promise<ClientDetails | undefined> {
      const [client] = await db.query<ClientDetails>(`SELECT ${CLIENT_DETAILS} FROM clients WHERE client_id = $1`, [
        clientId,
      ]);
      return client;
    },

    /**
     * Changes a client's name, time zone, source mapping, collect origins (each replaced whole) or
     * settings of the data-driven models: the client,
     * 'unknown_client', or 'unknown_time_zone' when PostgreSQL (which buckets exports by it) does
     * not know the zone.
     */
    async update(
      clientId: string,
      changes: { name?: string; time_zone?: string; source_platforms?: Record<string, string>; collect_origins?: string[] } & Partial<LearningSettings>,
    ): Promise<ClientDetails | 'unknown_client' | 'unknown_time_zone'> {
      if (changes.time_zone !== undefined) {
        // Both must know it: PostgreSQL buckets exports by it, Node.js resolves their periods.
        const known = await db.query('SELECT 1 FROM pg_timezone_names WHERE name = $1', [changes.time_zone]);
        if (known.length === 0 || !knownToNode(changes.time_zone)) return 'unknown_time_zone';
      }
      const [client] = await db.query<ClientDetails>(
        `UPDATE clients SET name = coalesce($2, name), time_zone = coalesce($3, time_zone),
                source_platforms = coalesce($4::jsonb, source_platforms), collect_origins = coalesce($5::jsonb, collect_origins),
                channel_grouping = coalesce($6, channel_grouping), training_days = coalesce($7, training_days), markov_order = coalesce($8, markov_order)
          WHERE client_id = $1
          RETURNING ${CLIENT_DETAILS}`,
        [
          clientId,
          changes.name ?? null,
          changes.time_zone ?? null,
          jsonOrNull(changes.source_platforms),
          jsonOrNull(changes.collect_origins),
          changes.channel_grouping ?? null,
          changes.training_days ?? null,
          changes.markov_order ?? null,
        ],
      );
      return client ?? 'unknown_client';
    },

    /** What a client's own credentials may read of it: its name and the zone its days are counted in; undefined when there is no such client. */
    async profile(clientId: string): Promise<ClientProfile | undefined> {
      const [client] = await db.query<ClientProfile>('SELECT name, time_zone FROM clients WHERE client_id = $1', [clientId]);
      return client;
    },

    /** The zone a client's days are counted in; the default when there is no such client. */
    async timeZone(clientId: string): Promise<string> {
      const [client] = await db.query<Pick<Client, 'time_zone'>>('SELECT time_zone FROM clients WHERE client_id = $1', [clientId]);
      return client?.time_zone ?? DEFAULT_TIME_ZONE;
    },

    /** What the public collector needs of a client: its source mapping and the origins its events may come from; undefined when there is no such client. */
    async collectSettings(clientId: string): Promise<Pick<ClientDetails, 'source_platforms' | 'collect_origins'> | undefined> {
      const [client] = await db.query<Pick<ClientDetails, 'source_platforms' | 'collect_origins'>>(
        'SELECT source_platforms, collect_origins FROM clients WHERE client_id = $1',
        [clientId],
      );
      return client;
    },

    /** A new key for an existing client; undefined when there is no such client. */
    createKey(clientId: string, scope: KeyScope): Promise<IssuedKey | undefined> {
      return db.transaction(async (tx) => {
        const found = await tx.query('SELECT 1 FROM clients WHERE client_id = $1 FOR SHARE', [clientId]);
        return found.length === 0 ? undefined : issueKey(tx, clientId, scope);
      });
    },

    /**
     * Revokes a key at once (again is harmless, and keeps the first time); false when the client
     * has no such key. The time is this process's, passed in: Citus refuses now() inside the
     * coalesce of an UPDATE.
     */
    async revokeKey(clientId: string, keyId: string): Promise<boolean> {
      const rows = await db.query(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3::timestamptz)
          WHERE client_id = $1 AND key_id = $2
          RETURNING key_id`,
        [clientId, keyId, new Date()],
      );
      return rows.length > 0;
    },

    /** The hashes of the client's keys not revoked, each with its scope. */
    activeKeys(clientId: string): Promise<{ hash: Uint8Array; scope: KeyScope }[]> {
      return db.query<{ hash: Uint8Array; scope: KeyScope }>('SELECT key_hash AS hash, scope FROM api_keys WHERE client_id = $1 AND revoked_at IS NULL', [clientId]);
    },
  };
}

/** What a client's requests read of its settings. */
export type ClientSettings = Pick<ClientRepository, 'timeZone' | 'profile'>;

export interface ClientProfile {
  name: string;
  time_zone: string;
}

/** The settings of the UAT test credentials, which have no client: the defaults. */
export const standInClientSettings: ClientSettings = {
  timeZone: async () => DEFAULT_TIME_ZONE,
  profile: async () => ({ name: 'UAT test credentials', time_zone: DEFAULT_TIME_ZONE }),
};
