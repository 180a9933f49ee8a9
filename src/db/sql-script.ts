/**
 * The statements of a SQL script (a migration file), split at the semicolons that end them:
 * not those inside comments, quoted strings or identifiers, or dollar-quoted bodies. Each keeps
 * its text as written, comments included; empty ones (comments alone) are left out.
 */
export function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let i = 0;
  const skipPast = (end: string, from: number) => {
    const at = script.indexOf(end, from);
    return at === -1 ? script.length : at + end.length;
  };
  while (i < script.length) {
    const rest = script.slice(i);
    if (rest.startsWith('--')) i = skipPast('\n', i);
    else if (rest.startsWith('/*')) i = skipPast('*/', i + 2);
    else if (script[i] === "'" || script[i] === '"') i = skipPast(script[i]!, i + 1);
    else if (script[i] === '$' && /^\$[A-Za-z_]*\$/.test(rest)) {
      const tag = /^\$[A-Za-z_]*\$/.exec(rest)![0];
      i = skipPast(tag, i + tag.length);
    } else if (script[i] === ';') {
      statements.push(script.slice(start, i));
      start = ++i;
    } else i++;
  }
  statements.push(script.slice(start));
  return statements.filter((statement) => withoutComments(statement).trim() !== '');
}

const withoutComments = (statement: string) => statement.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, '');
