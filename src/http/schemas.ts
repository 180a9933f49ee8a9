import { Type } from 'typebox';
import type { Environment } from '../auth/tenant.js';

/**
 * The longest free text taken (names, addresses, codes, tags): far beyond real ones, and a bound
 * on what one field of a request can cost to check, store and export.
 */
export const MAX_TEXT_LENGTH = 4096;

export const Text = (description?: string) => Type.String({ maxLength: MAX_TEXT_LENGTH, ...(description && { description }) });

export const NonEmptyString = (description: string) => Type.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH, description });

/**
 * The longest identifier taken. Identifiers are index keys, and an index entry must fit in about
 * 2.7 kB: 255 characters leave room for several in one key, even at four bytes a character.
 */
export const MAX_ID_LENGTH = 255;

export const Identifier = (description: string) => Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description });

export const DateTime = (description: string) =>
  Type.String({
    format: 'date-time',
    description: `${description} ISO-8601 with a time zone: Z, or an offset with or without a colon (-08:00, -0800).`,
  });

// Beside the request schemas, for the routes' response schemas.
export { ErrorEnvelope } from './error-envelope.js';

/** The environment a port serves: production, or uat (the acceptance-testing copy, its data kept apart). */
export const EnvironmentServed = Type.Unsafe<Environment>({
  type: 'string',
  enum: ['production', 'uat'],
  description: 'The environment whose data this port serves: production, or uat (the acceptance-testing copy on the UAT port, its data kept apart).',
  examples: ['production'],
});
