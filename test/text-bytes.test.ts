import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinedBytes } from '../src/exports/text-bytes.js';

test('joinedBytes: the same bytes as joining the texts, multi-byte characters and separators included', () => {
  const texts = ['{"a":"é"}', '', '{"b":"日本"}', 'plain\r\n'];
  assert.deepEqual(joinedBytes(texts, ','), Buffer.from(texts.join(',')));
  assert.deepEqual(joinedBytes(texts, ',', true), Buffer.from(`,${texts.join(',')}`));
  assert.deepEqual(joinedBytes(texts), Buffer.from(texts.join('')));
  assert.deepEqual(joinedBytes([], ',', true), Buffer.alloc(0));
  assert.deepEqual(joinedBytes(['x'], ' · '), Buffer.from('x'));
});
