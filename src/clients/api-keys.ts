import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'trb_';

/** A new API key: 256 random bits, URL-safe. It is shown once and only its hash is kept. */
export function generateApiKey(): string {
  return PREFIX + randomBytes(32).toString('base64url');
}

/**
 * SHA-256 is the right hash here: a key holds 256 random bits, so a slow password hash would add
 * cost on every request and no protection.
 */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Compares a secret's hash against every hash, in time that does not depend on where they differ. */
export function matchesAny(candidate: Buffer, hashes: readonly Uint8Array[]): boolean {
  return matching(candidate, hashes.map((hash) => ({ hash }))) !== undefined;
}

/** The one of `keys` whose hash is the secret's, compared with every one in time that does not depend on where they differ. */
export function matching<K extends { hash: Uint8Array }>(candidate: Buffer, keys: readonly K[]): K | undefined {
  let matched: K | undefined;
  for (const key of keys) {
    if (key.hash.length === candidate.length && timingSafeEqual(key.hash, candidate)) matched = key;
  }
  return matched;
}

/**
 * What a key may do: `write`, send and read data; `read`, read it (reports, exports,
 * explanations, the dashboard) and nothing that writes. Set when the key is made.
 */
export const KEY_SCOPES = ['read', 'write'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];
