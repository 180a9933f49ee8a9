import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createLinkSigner, signingSecret } from '../src/exports/links.js';
import { createTestDatabase } from './helpers.js';

const store = await createTestDatabase();
after(() => store.drop());

const EXPORT = '0b7f8a58-6f0e-4d6b-9a43-3f5d2f0d9c61';
const OTHER = '5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c';
const NOW = 1_800_000_000;

function parts(link: string) {
  const url = new URL(link);
  const [, , , , exportId, file] = url.pathname.split('/');
  return { url, exportId: exportId!, file: decodeURIComponent(file!), expires: Number(url.searchParams.get('expires')), signature: url.searchParams.get('signature')! };
}

test('a link verifies for its export, file and expiry only, and not after it expires', () => {
  const signer = createLinkSigner('secret', 'https://t.example.com');
  const link = parts(signer.link(EXPORT, 'spend report-1.csv', NOW + 60));
  assert.equal(link.url.origin + link.url.pathname, `https://t.example.com/v1/exports/files/${EXPORT}/spend%20report-1.csv`);
  assert.equal(signer.verify(link.exportId, link.file, link.expires, link.signature, NOW), true);
  assert.equal(signer.verify(OTHER, link.file, link.expires, link.signature, NOW), false, 'another export');
  assert.equal(signer.verify(link.exportId, 'other.csv', link.expires, link.signature, NOW), false, 'another file');
  assert.equal(signer.verify(link.exportId, link.file, link.expires + 1, link.signature, NOW), false, 'a longer life');
  assert.equal(signer.verify(link.exportId, link.file, link.expires, `${link.signature.slice(0, -1)}A`, NOW), false, 'a tampered signature');
  assert.equal(signer.verify(link.exportId, link.file, link.expires, link.signature, NOW + 61), false, 'expired');
  assert.equal(createLinkSigner('other secret', 'https://t.example.com').verify(link.exportId, link.file, link.expires, link.signature, NOW), false);
});

test('without a configured secret, one is generated once and kept in the store for every process', async () => {
  const first = await signingSecret(store.db, undefined);
  const [second, third] = await Promise.all([signingSecret(store.db, undefined), signingSecret(store.db, undefined)]);
  assert.ok(first.length >= 40);
  assert.equal(second, first);
  assert.equal(third, first);
  assert.equal(await signingSecret(store.db, 'configured'), 'configured');
});
