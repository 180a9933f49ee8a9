import { Type } from 'typebox';

export const CLIENT_NAME_MAX_LENGTH = 200;
/** Something other than spaces (the empty name is min_length's to report). */
const VISIBLE = /^$|\S/;

export const ClientName = Type.String({
  minLength: 1,
  maxLength: CLIENT_NAME_MAX_LENGTH,
  pattern: VISIBLE.source,
  description: 'Name of the shop.',
  'x-messages': { pattern: 'Must not be blank' },
});

/** The same rule for the CLI, which has no schema validator in front of it. */
export function clientNameProblem(name: string): string | undefined {
  if (!/\S/.test(name)) return 'the name must not be blank';
  if (name.length > CLIENT_NAME_MAX_LENGTH) return `the name must be at most ${CLIENT_NAME_MAX_LENGTH} characters long`;
  return undefined;
}
