import type pg from 'pg';

/** A part of a statement's work: where in the plan, and the milliseconds its nodes took themselves. */
export interface StatementPart {
  part: string;
  ms: number;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Subplan Name'?: string;
  'Parent Relationship'?: string;
  'Sort Key'?: string[];
  'Group Key'?: string[];
  'Hash Cond'?: string;
  'Join Filter'?: string;
  'Function Name'?: string;
  'Actual Total Time': number;
  'Actual Loops': number;
  Plans?: PlanNode[];
}

/** What tells a node from others of its kind: its table and index, or its keys or condition, shortened. */
function detailOf(node: PlanNode): string {
  const relation = node['Relation Name'] ? ` on ${node['Relation Name']}${node['Index Name'] ? ` (${node['Index Name']})` : ''}` : '';
  const keys = node['Sort Key'] ?? node['Group Key'];
  const condition = keys ? `by ${keys.join(', ')}` : (node['Hash Cond'] ?? node['Join Filter'] ?? node['Function Name']);
  const shortened = condition && condition.length > 90 ? `${condition.slice(0, 87)}...` : condition;
  return `${relation}${shortened ? ` ${shortened.replace(/\s+/g, ' ')}` : ''}`;
}

/**
 * Where a statement's time goes: it is run under EXPLAIN ANALYZE, in a transaction that first runs
 * `settings` and is rolled back, and each plan node's own time (its time less its children's,
 * over all its loops) is summed by the part of the plan it is in (the nearest materialized CTE or
 * subplan above it), its kind and the table it reads or its keys. A CTE Scan's time is its
 * CTE's, counted where the CTE is, so it counts nothing itself. The parts are returned largest
 * first, with the statement's own milliseconds. Parallel workers' times would be counted each:
 * `settings` should leave them out where the statement runs without them (through a cursor).
 */
export async function profileStatement(client: pg.Client, sql: string, params: unknown[], settings: readonly string[]): Promise<{ ms: number; parts: StatementPart[] }> {
  await client.query('BEGIN');
  try {
    for (const setting of settings) await client.query(setting);
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    const [{ Plan: root, 'Execution Time': ms }] = rows[0]!['QUERY PLAN'];
    const sums = new Map<string, number>();
    const visit = (node: PlanNode, within: string) => {
      const where = node['Subplan Name'] ?? within;
      const inclusive = (each: PlanNode) => each['Actual Total Time'] * each['Actual Loops'];
      const children = node.Plans ?? [];
      // A CTE's plan is a child of the node that declares it, but its time is in the CTE Scans that read it.
      const ranBelow = children.filter((child) => !(child['Parent Relationship'] === 'InitPlan' && child['Subplan Name']?.startsWith('CTE ')));
      const own = node['Node Type'] === 'CTE Scan' ? 0 : inclusive(node) - ranBelow.reduce((sum, child) => sum + inclusive(child), 0);
      const part = `${where}: ${node['Node Type']}${detailOf(node)}`;
      sums.set(part, (sums.get(part) ?? 0) + Math.max(own, 0));
      for (const child of children) visit(child, where);
    };
    visit(root, 'statement');
    const parts = [...sums].map(([part, partMs]) => ({ part, ms: partMs })).sort((a, b) => b.ms - a.ms);
    return { ms, parts };
  } finally {
    await client.query('ROLLBACK');
  }
}
