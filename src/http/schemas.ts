import { Type } from 'typebox';

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
const MAX_ID_LENGTH = 255;

export const Identifier = (description: string) => Type.String({ minLength: 1, maxLength: MAX_ID_LENGTH, description });

export const DateTime = (description: string) =>
  Type.String({
    format: 'date-time',
    description: `${description} ISO-8601 with a time zone: Z, or an offset with or without a colon (-08:00, -0800).`,
  });

export const ErrorEnvelope = Type.Object(
  {
    message: Type.String(),
    errors: Type.Union([
      Type.Array(
        Type.Object(
          {
            loc: Type.String({ description: 'body/<JSON pointer>, query/<name>, path/<name> or header/<name>.' }),
            msg: Type.String(),
            type: Type.String({ description: 'Machine-readable code, such as required or min_length.' }),
            order_id: Type.Optional(Type.String({ description: 'The order the problem is in, when it has an id.' })),
          },
          { additionalProperties: true },
        ),
      ),
      Type.Null(),
    ]),
    request_id: Type.String({ format: 'uuid' }),
  },
  { description: 'The body of every 4xx and 5xx answer.' },
);
