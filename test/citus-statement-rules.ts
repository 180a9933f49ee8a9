import pg from 'pg';
import { TABLE_PLACEMENT } from '../src/db/citus.js';

/*
 * What Citus refuses in a statement that writes a distributed or reference table, checked on a
 * plain PostgreSQL server, so that CI (which has no Citus) keeps the service's statements
 * runnable on one. PostgreSQL parses and rewrites the statement (PREPARE, with
 * debug_print_rewritten sending its query tree to this connection), and the rules below are
 * applied to that tree as Citus's planner applies them (multi_router_planner.c,
 * ModifyQuerySupported and ErrorIfOnConflictNotSupported), to every INSERT, UPDATE and DELETE of
 * the statement, its CTEs' included:
 *
 * - RETURNING: no function that is not immutable. A cast is a function: `timestamptz::text` reads
 *   the session's time zone, so it is stable ("non-IMMUTABLE functions are not allowed in the
 *   RETURNING clause");
 * - ON CONFLICT … DO UPDATE SET, other than a plain column, and its WHERE: immutable functions only;
 * - an UPDATE's SET and an UPDATE's or DELETE's WHERE: no volatile function, no stable one applied
 *   to a column (one over parameters and constants Citus computes on the coordinator), and no
 *   CASE or COALESCE holding a function that is not immutable;
 * - a MERGE: immutable functions only, anywhere in it.
 *
 * Stricter than Citus where Citus looks less far, so that a statement that passes here runs
 * there: the RETURNING of an INSERT … SELECT (which Citus plans apart, and would compute on a
 * worker), stable functions of a column inside a subquery, and a stable function applied to a
 * CASE or COALESCE of columns (Citus lets both through). The service keeps one rule for every write.
 *
 * Not checked, as Citus does not refuse it: a SELECT around a modifying CTE, which Citus sends
 * with it to the shard, so that a stable function there runs in the worker's session (its time
 * zone); the service's statements only make text of a timestamptz there, which keeps its offset.
 */

/** A node of PostgreSQL's query tree as nodeToString prints it: its type and its fields. */
interface TreeNode {
  type: string;
  fields: Record<string, TreeValue>;
}
type TreeValue = TreeNode | TreeValue[] | string | null;

const isNode = (value: TreeValue | undefined): value is TreeNode => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A token of nodeToString's text: `(`, `)`, `{`, `}` and `<>` are structure unless escaped. */
interface Token {
  text: string;
  structure: boolean;
}

/** Splits nodeToString's text into tokens (a backslash escapes the next character, as outToken writes). */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let word = '';
  let escaped = false;
  const end = () => {
    if (word) tokens.push({ text: word, structure: !escaped && word === '<>' });
    [word, escaped] = ['', false];
  };
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '\\') {
      word += text[++i] ?? '';
      escaped = true;
    } else if (' \n\t'.includes(char)) end();
    else if ('(){}'.includes(char)) {
      end();
      tokens.push({ text: char, structure: true });
    } else word += char;
  }
  end();
  return tokens;
}

/** Reads nodeToString's text: nodes `{TYPE :field value …}`, lists `(…)`, words, and `<>` for NULL. */
export function parseTree(text: string): TreeValue {
  const tokens = tokenize(text);
  let at = 0;
  const is = (token: Token | undefined, structure: string) => token?.structure === true && token.text === structure;
  // A field's name: an unescaped word of `:` and letters (a name a statement gives, such as an
  // alias written ":x", is escaped only where it holds a structure character: read as a field,
  // it ends its node's previous field early, which only shortens a value no rule reads).
  const isField = (token: Token | undefined) => token !== undefined && !token.structure && /^:[a-zA-Z_]+$/.test(token.text);
  const value = (): TreeValue => {
    const token = tokens[at++];
    if (token === undefined) throw new Error('the query tree ended early');
    if (is(token, '<>')) return null;
    if (is(token, '(')) {
      const items: TreeValue[] = [];
      while (!is(tokens[at], ')')) items.push(value());
      at++;
      return items;
    }
    if (!is(token, '{')) return token.text;
    const node: TreeNode = { type: tokens[at++]!.text, fields: {} };
    while (!is(tokens[at], '}')) {
      const field = tokens[at++]!.text.slice(1);
      // A field holds one value, except a constant's datum: its length, then its bytes in brackets.
      const values: TreeValue[] = [];
      while (!is(tokens[at], '}') && !isField(tokens[at])) values.push(value());
      node.fields[field] = values.length === 1 ? values[0]! : values;
    }
    at++;
    return node;
  };
  return value();
}

/** Every node of `value`, itself included, depth first. */
function* nodesOf(value: TreeValue | undefined): Generator<TreeNode> {
  if (Array.isArray(value)) for (const item of value) yield* nodesOf(item);
  else if (isNode(value)) {
    yield value;
    for (const field of Object.values(value.fields)) yield* nodesOf(field);
  }
}

const word = (node: TreeNode, field: string) => node.fields[field] as string;
const numberOf = (node: TreeNode, field: string) => Number(word(node, field));

/** The type of an expression, for the expressions a cast may read from (exprType of nodeFuncs.c). */
function typeOf(node: TreeValue | undefined): number | undefined {
  if (!isNode(node)) return undefined;
  const field = {
    VAR: 'vartype',
    CONST: 'consttype',
    PARAM: 'paramtype',
    FUNCEXPR: 'funcresulttype',
    OPEXPR: 'opresulttype',
    NULLIFEXPR: 'opresulttype',
    RELABELTYPE: 'resulttype',
    COERCEVIAIO: 'resulttype',
    ARRAYCOERCEEXPR: 'resulttype',
    COERCETODOMAIN: 'resulttype',
    FIELDSELECT: 'resulttype',
    AGGREF: 'aggtype',
    WINDOWFUNC: 'wintype',
    CASEEXPR: 'casetype',
    COALESCEEXPR: 'coalescetype',
    MINMAXEXPR: 'minmaxtype',
    SQLVALUEFUNCTION: 'type',
    ARRAYEXPR: 'array_typeid',
    ROWEXPR: 'row_typeid',
    SUBSCRIPTINGREF: 'refrestype',
  }[node.type];
  if (field) return numberOf(node, field);
  if (['BOOLEXPR', 'NULLTEST', 'BOOLEANTEST', 'SCALARARRAYOPEXPR', 'DISTINCTEXPR', 'ROWCOMPAREEXPR'].includes(node.type)) return BOOL;
  if (node.type === 'COLLATEEXPR') return typeOf(node.fields.arg);
  if (node.type === 'CASETESTEXPR') return numberOf(node, 'typeId');
  // A scalar subquery's type is its one column's.
  if (node.type === 'SUBLINK' && isNode(node.fields.subselect)) {
    const [first] = (node.fields.subselect.fields.targetList ?? []) as TreeNode[];
    return node.fields.subLinkType === '4' ? typeOf(first?.fields.expr) : BOOL;
  }
  return undefined;
}
const BOOL = 16;

type Volatility = 'i' | 's' | 'v';
const RANK: Record<Volatility, number> = { i: 0, s: 1, v: 2 };

/** What the catalog says of the functions, operators and types a tree names. */
interface Catalog {
  procs: Map<number, { name: string; volatility: Volatility }>;
  operators: Map<number, number>;
  types: Map<number, { input: number; output: number }>;
}

/** The functions a node calls itself (check_functions_in_node of nodeFuncs.c): their oids, or a pseudo-function's volatility. */
function callsOf(node: TreeNode, catalog: Catalog): { name: string; volatility: Volatility }[] {
  const procs = (oids: number[]) => oids.map((oid) => catalog.procs.get(oid) ?? { name: `function ${oid}`, volatility: 'v' as const });
  switch (node.type) {
    case 'FUNCEXPR':
      return procs([numberOf(node, 'funcid')]);
    case 'OPEXPR':
    case 'DISTINCTEXPR':
    case 'NULLIFEXPR':
    case 'SCALARARRAYOPEXPR':
      return procs([numberOf(node, 'opfuncid') || (catalog.operators.get(numberOf(node, 'opno')) ?? 0)]);
    case 'ROWCOMPAREEXPR':
      return procs((node.fields.opnos as string[]).slice(1).map((opno) => catalog.operators.get(Number(opno)) ?? 0));
    case 'AGGREF':
      return procs([numberOf(node, 'aggfnoid')]);
    case 'WINDOWFUNC':
      return procs([numberOf(node, 'winfnoid')]);
    case 'COERCEVIAIO': {
      const from = catalog.types.get(typeOf(node.fields.arg) ?? 0);
      const to = catalog.types.get(numberOf(node, 'resulttype'));
      return from && to ? procs([from.output, to.input]) : [{ name: 'a cast from an unknown type', volatility: 'v' }];
    }
    case 'SQLVALUEFUNCTION':
      return [{ name: 'CURRENT_TIMESTAMP or the like', volatility: 's' }];
    case 'NEXTVALUEEXPR':
      return [{ name: 'nextval', volatility: 'v' }];
    default:
      return [];
  }
}

const mostVolatile = (calls: { name: string; volatility: Volatility }[]) =>
  calls.reduce<{ name: string; volatility: Volatility } | undefined>((worst, call) => (!worst || RANK[call.volatility] > RANK[worst.volatility] ? call : worst), undefined);

/** The first call in `value` at least as volatile as `least`, as `name (stable)`. */
function callAtLeast(value: TreeValue | undefined, least: Volatility, catalog: Catalog): string | undefined {
  for (const node of nodesOf(value)) {
    const call = mostVolatile(callsOf(node, catalog));
    if (call && RANK[call.volatility] >= RANK[least]) return describe(call);
  }
  return undefined;
}
const describe = ({ name, volatility }: { name: string; volatility: Volatility }) => `${name} (${{ i: 'immutable', s: 'stable', v: 'volatile' }[volatility]})`;

/**
 * What Citus cannot send to the shards in an UPDATE's SET or a modification's WHERE
 * (MasterIrreducibleExpression): a stable function applied to a column, or a CASE or COALESCE
 * holding one that is not immutable.
 */
function irreducible(value: TreeValue | undefined, catalog: Catalog): string | undefined {
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = irreducible(item, catalog);
      if (found) return found;
    }
    return undefined;
  }
  if (!isNode(value)) return undefined;
  if (value.type === 'CASEEXPR' || value.type === 'COALESCEEXPR') {
    const call = callAtLeast(value, 's', catalog);
    return call && `${call} inside ${value.type === 'CASEEXPR' ? 'CASE' : 'COALESCE'}`;
  }
  const call = mostVolatile(callsOf(value, catalog));
  if (call?.volatility === 's' && [...nodesOf(Object.values(value.fields))].some((node) => node.type === 'VAR')) return `${describe(call)} applied to a column`;
  return irreducible(Object.values(value.fields), catalog);
}

const COMMAND = { 2: 'UPDATE', 3: 'INSERT', 4: 'DELETE', 5: 'MERGE' } as Record<number, string>;

/** What Citus would refuse in one modifying query of the tree, the table it writes given. */
function refusalsOf(query: TreeNode, catalog: Catalog): string[] {
  const command = COMMAND[numberOf(query, 'commandType')]!;
  const refusals: string[] = [];
  const refuse = (clause: string, found: string | undefined) => found && refusals.push(`${command}: ${clause} calls ${found}`);
  // Citus plans a MERGE into a distributed table only with immutable functions anywhere in it.
  if (command === 'MERGE') {
    refuse('its statement', callAtLeast(query, 's', catalog));
    return refusals;
  }
  refuse('RETURNING', callAtLeast(query.fields.returningList, 's', catalog));
  const onConflict = query.fields.onConflict;
  if (isNode(onConflict)) {
    const set = (onConflict.fields.onConflictSet ?? []) as TreeNode[];
    for (const entry of set) if (entry.fields.expr && (entry.fields.expr as TreeNode).type !== 'VAR') refuse(`DO UPDATE SET ${word(entry, 'resname')}`, callAtLeast(entry.fields.expr, 's', catalog));
    refuse('ON CONFLICT … WHERE', callAtLeast([onConflict.fields.onConflictWhere ?? null, onConflict.fields.arbiterWhere ?? null], 's', catalog));
  }
  if (command === 'UPDATE') {
    for (const entry of (query.fields.targetList ?? []) as TreeNode[]) {
      if (word(entry, 'resjunk') === 'true') continue;
      refuse(`SET ${word(entry, 'resname')}`, callAtLeast(entry.fields.expr, 'v', catalog) ?? irreducible(entry.fields.expr, catalog));
    }
  }
  if (command === 'UPDATE' || command === 'DELETE') {
    const quals = isNode(query.fields.jointree) ? query.fields.jointree.fields.quals : null;
    refuse('WHERE', callAtLeast(quals, 'v', catalog) ?? irreducible(quals, catalog));
  }
  return refusals;
}

/** The modifying queries of a tree, each with the oid of the table it writes. */
function* modifyingQueries(tree: TreeValue): Generator<{ query: TreeNode; table: number }> {
  for (const node of nodesOf(tree)) {
    if (node.type !== 'QUERY' || !COMMAND[numberOf(node, 'commandType')]) continue;
    const target = (node.fields.rtable as TreeNode[])[numberOf(node, 'resultRelation') - 1]!;
    yield { query: node, table: numberOf(target, 'relid') };
  }
}

async function readCatalog(client: pg.Client, trees: TreeValue[]): Promise<Catalog> {
  const nodes = trees.flatMap((tree) => [...nodesOf(tree)]);
  const numbers = (type: string[], field: string) => nodes.filter((node) => type.includes(node.type)).map((node) => numberOf(node, field));
  const opnos = [
    ...numbers(['OPEXPR', 'DISTINCTEXPR', 'NULLIFEXPR', 'SCALARARRAYOPEXPR'], 'opno'),
    ...nodes.filter((node) => node.type === 'ROWCOMPAREEXPR').flatMap((node) => (node.fields.opnos as string[]).slice(1).map(Number)),
  ];
  const casts = nodes.filter((node) => node.type === 'COERCEVIAIO');
  const typeOids = [...casts.map((node) => typeOf(node.fields.arg) ?? 0), ...casts.map((node) => numberOf(node, 'resulttype'))];
  const operators = new Map(
    (await client.query<{ oid: number; code: number }>('SELECT oid::int, oprcode::oid::int AS code FROM pg_operator WHERE oid = ANY($1)', [opnos])).rows.map((r) => [r.oid, r.code]),
  );
  const types = new Map(
    (
      await client.query<{ oid: number; input: number; output: number }>(
        'SELECT oid::int, typinput::oid::int AS input, typoutput::oid::int AS output FROM pg_type WHERE oid = ANY($1)',
        [typeOids],
      )
    ).rows.map(({ oid, ...io }) => [oid, io]),
  );
  const procOids = [
    ...numbers(['FUNCEXPR'], 'funcid'),
    ...numbers(['OPEXPR', 'DISTINCTEXPR', 'NULLIFEXPR', 'SCALARARRAYOPEXPR'], 'opfuncid'),
    ...numbers(['AGGREF'], 'aggfnoid'),
    ...numbers(['WINDOWFUNC'], 'winfnoid'),
    ...operators.values(),
    ...[...types.values()].flatMap(({ input, output }) => [input, output]),
  ];
  const procs = new Map(
    (
      await client.query<{ oid: number; name: string; volatility: Volatility }>(
        'SELECT oid::int, proname AS name, provolatile AS volatility FROM pg_proc WHERE oid = ANY($1)',
        [procOids],
      )
    ).rows.map(({ oid, ...proc }) => [oid, proc]),
  );
  return { procs, operators, types };
}

const PLACED = new Set(Object.entries(TABLE_PLACEMENT).flatMap(([table, placement]) => (placement === 'coordinator' ? [] : [table])));

/**
 * A connection to the database of `url` that tells what Citus would refuse in a statement:
 * `refusals(sql)` parses it there (nothing runs) and answers one line for each thing refused.
 */
export async function citusStatementRules(url: string): Promise<{ refusals(sql: string): Promise<string[]>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("SET debug_print_rewritten = on; SET debug_pretty_print = off; SET client_min_messages = 'log'");
  // The trees are for this connection, not for the server's log, which LOG messages reach
  // whatever the client's level: 140 MB of them in an hour of test runs. Only a superuser may
  // say so; another role's server logs them.
  await client.query("SET log_min_messages = 'panic'").catch(() => {});
  let printed: string[] = [];
  client.on('notice', (notice) => {
    if (notice.message === 'rewritten parse tree:' && notice.detail) printed.push(notice.detail);
  });
  return {
    async refusals(sql) {
      printed = [];
      await client.query(`PREPARE citus_statement_rules AS ${sql}`);
      await client.query('DEALLOCATE citus_statement_rules');
      const trees = printed.map((tree) => {
        try {
          return parseTree(tree);
        } catch (error) {
          throw new Error(`The query tree of this statement could not be read (${(error as Error).message}):\n${sql}`, { cause: error });
        }
      });
      const catalog = await readCatalog(client, trees);
      const modifying = trees.flatMap((tree) => [...modifyingQueries(tree)]);
      const tables = new Map(
        (await client.query<{ oid: number; name: string }>('SELECT oid::int, relname AS name FROM pg_class WHERE oid = ANY($1)', [modifying.map((m) => m.table)])).rows.map(
          (r) => [r.oid, r.name],
        ),
      );
      return modifying.filter(({ table }) => PLACED.has(tables.get(table) ?? '')).flatMap(({ query }) => refusalsOf(query, catalog));
    },
    close: () => client.end(),
  };
}
