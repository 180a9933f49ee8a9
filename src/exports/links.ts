import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database } from '../db/index.js';

/**
 * Download links of export files: `<public url>/v1/exports/files/<export id>/<file>?expires=<unix
 * seconds>&signature=<HMAC-SHA256>`. Whoever holds a link can download that one file until it
 * expires; changing any part of it breaks the signature.
 */
export interface LinkSigner {
  link(exportId: string, file: string, expires: number): string;
  /** True when `signature` is the one of this export, file and expiry, and the expiry is ahead. */
  verify(exportId: string, file: string, expires: number, signature: string, now?: number): boolean;
}

export function createLinkSigner(secret: string, publicUrl: string): LinkSigner {
  const sign = (exportId: string, file: string, expires: number) =>
    createHmac('sha256', secret).update(`${exportId}\n${file}\n${expires}`).digest('base64url');
  return {
    link: (exportId, file, expires) =>
      `${publicUrl}/v1/exports/files/${exportId}/${encodeURIComponent(file)}?expires=${expires}&signature=${sign(exportId, file, expires)}`,
    verify(exportId, file, expires, signature, now = Date.now() / 1000) {
      const expected = Buffer.from(sign(exportId, file, expires));
      const given = Buffer.from(signature);
      return expires > now && given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
}

/**
 * The signing secret: EXPORT_SIGNING_SECRET, or one generated once and kept in the store, so that
 * every process (and every restart) signs and checks links with the same key.
 */
export async function signingSecret(db: Database, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  await db.query(
    `INSERT INTO service_settings (name, value) VALUES ('export_signing_secret', $1) ON CONFLICT (name) DO NOTHING`,
    [randomBytes(32).toString('base64url')],
  );
  const [row] = await db.query<{ value: string }>(`SELECT value FROM service_settings WHERE name = 'export_signing_secret'`);
  return row!.value;
}
