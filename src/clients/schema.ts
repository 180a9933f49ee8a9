import { Type } from 'typebox';

export const CLIENT_NAME_MAX_LENGTH = 200;

export const ClientName = Type.String({ minLength: 1, maxLength: CLIENT_NAME_MAX_LENGTH, description: 'Name of the shop.' });

/** The same rule for the CLI, which has no schema validator in front of it. */
export function clientNameProblem(name: string): string | undefined {
  if (name.trim().length === 0) return 'the name must not be empty';
  if (name.length > CLIENT_NAME_MAX_LENGTH) return `the name must be at most ${CLIENT_NAME_MAX_LENGTH} characters long`;
  return undefined;
}
