import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/index.js';
import { generateApiKey, hashSecret } from './api-keys.js';

export interface Client {
  client_id: string;
  name: string;
  created_at: Date;
}

export interface IssuedKey {
  api_key: string;
  key_id: string;
}

export type ClientRepository = ReturnType<typeof createClientRepository>;

export function createClientRepository(db: Database) {
  async function issueKey(sql: Queryable, clientId: string): Promise<IssuedKey> {
    const key: IssuedKey = { api_key: generateApiKey(), key_id: randomUUID() };
    await sql.query('INSERT INTO api_keys (client_id, key_id, key_hash) VALUES ($1, $2, $3)', [
      clientId,
      key.key_id,
      hashSecret(key.api_key),
    ]);
    return key;
  }

  return {
    /** Creates a client together with its first API key. */
    create(name: string): Promise<Client & IssuedKey> {
      return db.transaction(async (tx) => {
        const [client] = await tx.query<Client>(
          'INSERT INTO clients (client_id, name) VALUES ($1, $2) RETURNING client_id, name, created_at',
          [randomUUID(), name],
        );
        return { ...client!, ...(await issueKey(tx, client!.client_id)) };
      });
    },

    list(): Promise<Client[]> {
      return db.query<Client>('SELECT client_id, name, created_at FROM clients ORDER BY created_at, client_id');
    },

    /** A new key for an existing client; undefined when there is no such client. */
    createKey(clientId: string): Promise<IssuedKey | undefined> {
      return db.transaction(async (tx) => {
        const found = await tx.query('SELECT 1 FROM clients WHERE client_id = $1 FOR SHARE', [clientId]);
        return found.length === 0 ? undefined : issueKey(tx, clientId);
      });
    },

    /** Revokes a key at once (again is harmless); false when the client has no such key. */
    async revokeKey(clientId: string, keyId: string): Promise<boolean> {
      const rows = await db.query(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
          WHERE client_id = $1 AND key_id = $2
          RETURNING key_id`,
        [clientId, keyId],
      );
      return rows.length > 0;
    },

    async activeKeyHashes(clientId: string): Promise<Uint8Array[]> {
      const rows = await db.query<{ key_hash: Uint8Array }>(
        'SELECT key_hash FROM api_keys WHERE client_id = $1 AND revoked_at IS NULL',
        [clientId],
      );
      return rows.map((row) => row.key_hash);
    },
  };
}
