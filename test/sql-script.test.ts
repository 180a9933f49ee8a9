import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { splitStatements } from '../src/db/sql-script.js';

test('a script splits at the semicolons that end its statements', () => {
  assert.deepEqual(splitStatements('SELECT 1;\nSELECT 2;\n'), ['SELECT 1', '\nSELECT 2']);
  assert.deepEqual(splitStatements('SELECT 1'), ['SELECT 1']);
});

test('semicolons in comments, strings, identifiers and dollar-quoted bodies do not end a statement', () => {
  const script = [
    "-- a comment; with a semicolon\nSELECT 'a;b', 'it''s; here'",
    ' SELECT 1 AS "odd;name" /* a; b */',
    ' CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$',
    ' CREATE FUNCTION g() RETURNS int LANGUAGE sql AS $body$ SELECT $$;$$::text::int; $body$',
    ' SELECT $1::int',
  ];
  assert.deepEqual(splitStatements(`${script.join(';')};`), script);
});

test('comments alone are not a statement', () => {
  assert.deepEqual(splitStatements('-- only a comment;\n/* and; this */\n'), []);
  assert.deepEqual(splitStatements('SELECT 1;\n-- trailing; comment\n'), ['SELECT 1']);
});

test('every migration splits into whole statements', () => {
  const dir = new URL('../migrations/', import.meta.url);
  for (const file of fs.readdirSync(dir).filter((name) => name.endsWith('.sql'))) {
    const script = fs.readFileSync(new URL(file, dir), 'utf8');
    const statements = splitStatements(script);
    assert.ok(statements.length > 0, file);
    assert.equal(statements.join(';').replace(/\s+/g, ''), script.replace(/;\s*(--[^\n]*\s*)*$/, '').replace(/\s+/g, ''), file);
    for (const statement of statements) {
      const code = statement.replace(/--[^\n]*/g, '').trim();
      assert.match(code, /^(CREATE|ALTER|DROP|INSERT|UPDATE|DELETE|TRUNCATE) /, `${file}: ${code.slice(0, 60)}`);
    }
  }
});
