import { Type, type Static } from 'typebox';

/** One problem with a request: where (`loc`), what (`msg`) and a machine code (`type`). */
const ErrorItemSchema = Type.Object(
  {
    loc: Type.String({ description: 'body/<JSON pointer>, query/<name>, path/<name> or header/<name>.' }),
    msg: Type.String(),
    type: Type.String({ description: 'Machine-readable code, such as required or min_length.' }),
    order_id: Type.Optional(Type.String({ description: 'The order the problem is in, when it has an id.' })),
  },
  { additionalProperties: true },
);

/** The schema of the body of every error answer, for the routes' response schemas (and so the OpenAPI document). */
export const ErrorEnvelope = Type.Object(
  {
    message: Type.String(),
    errors: Type.Union([Type.Array(ErrorItemSchema), Type.Null()]),
    request_id: Type.String({ format: 'uuid' }),
  },
  { description: 'The body of every 4xx and 5xx answer.' },
);

/** Details beside the three fields are allowed (the schema's additionalProperties). */
export type ErrorItem = Static<typeof ErrorItemSchema> & { [detail: string]: unknown };

export interface ErrorEnvelope extends Omit<Static<typeof ErrorEnvelope>, 'errors'> {
  errors: ErrorItem[] | null;
}
