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
  let matched = false;
  for (const hash of hashes) {
    if (hash.length === candidate.length && timingSafeEqual(hash, candidate)) matched = true;
  }
  return matched;
}
