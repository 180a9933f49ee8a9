import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { csvLine, csvRowSelect } from '../src/exports/csv.js';
import { startService } from './helpers.js';

// The CSV line the database makes (csvRowSelect) is the one csvLine writes of the cells, prefixed
// for spreadsheets as the rule says (the function below, as Node applied it before).
const service = await startService();
after(() => service.close());

const FORMULA_START = /^(?:[\t\r\n]|[ \t\r\n]*[=+\-@])/;
const asSpreadsheetText = (cell: string) => (FORMULA_START.test(cell) ? `'${cell}` : cell);

const CELLS = ['=1+1', '+x', '-5', '@a', '\tx', '\rx', '\nx', 'a,b', 'a"b', '"', 'a\nb', 'a\rb', '\\', '\\t', '\\r', "'", "'=x", '', ' =x', '€=', '-', '^x', '[x]', 'x\\', '=a,"b"', '\t', '\r', '\r\n', 'a\u2028b', '—', '\n=x', ' \n+x', '  @x', ' x=1', '\u00a0=x'];

for (const escapeFormulas of [true, false]) {
  test(`client text cells, escapeFormulas ${escapeFormulas}`, async () => {
    const values = [...CELLS.map((cell) => [cell, '1.50']), [null, '-10'], ['x', null]];
    const params = values.flat();
    const rows = values.map((_, i) => `($${2 * i + 1}::text, $${2 * i + 2}::numeric)`).join(', ');
    const [line, distinct] = csvRowSelect(['platform', 'spend'], { clientTextColumns: ['platform'], escapeFormulas }, 'platform');
    const got = await service.db.query<{ line: string }>(`SELECT ${line}, ${distinct} FROM (VALUES ${rows}) AS r (platform, spend)`, params);
    const expected = values.map(([platform, spend]) => {
      const cells = [platform === null ? '' : String(platform), spend === null ? '' : String(spend)];
      return csvLine([escapeFormulas ? asSpreadsheetText(cells[0]!) : cells[0]!, cells[1]!]);
    });
    assert.deepEqual(got.map((row) => row.line), expected);
  });
}

test('with standard_conforming_strings off', { skip: service.db.kind !== 'postgres' }, async () => {
  await service.db.transaction(async (tx) => {
    await tx.query('SET LOCAL standard_conforming_strings = off');
    const [line] = csvRowSelect(['platform'], { clientTextColumns: ['platform'], escapeFormulas: true }, 'platform');
    const got = await tx.query<{ line: string }>(`SELECT ${line} FROM unnest($1::text[]) AS r (platform)`, [CELLS]);
    assert.deepEqual(got.map((row) => row.line), CELLS.map((cell) => csvLine([asSpreadsheetText(cell)])));
  });
});
