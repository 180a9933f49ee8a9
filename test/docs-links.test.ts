import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

/*
 * Every link from README.md and docs/*.md to a file of the repository reaches it, and every
 * #anchor names a heading of its target, as GitHub makes their ids. Links to URLs are not checked.
 */

const root = path.resolve(import.meta.dirname, '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** The lines of a Markdown text outside fenced code blocks. */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  const lines: string[] = [];
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) fence = marker;
    else if (fence !== undefined && marker?.startsWith(fence)) fence = undefined;
    else if (fence === undefined) lines.push(line);
  }
  return lines;
}

/** GitHub's id of a heading: lower case, without punctuation other than `-` and `_`, each space a `-`. */
function slug(heading: string): string {
  return heading
    .replaceAll('`', '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replaceAll(' ', '-');
}

/** The ids of a page's headings; a repeated one gets -1, -2, … as on GitHub. */
function anchors(markdown: string): Set<string> {
  const ids = new Set<string>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    let id = base;
    for (let n = 1; ids.has(id); n++) id = `${base}-${n}`;
    ids.add(id);
  }
  return ids;
}

/** The targets of a page's inline links and images (not those in code), `<…>` and titles removed. */
function linkTargets(markdown: string): string[] {
  return proseLines(markdown).flatMap((line) => [...line.replace(/`+[^`]*`+/g, '').matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!));
}

/** What is wrong with `target`, a link of the page `from`, if anything. */
function brokenLink(from: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [file = '', anchor] = target.split('#');
  const resolved = file === '' ? path.join(root, from) : path.resolve(path.dirname(path.join(root, from)), decodeURIComponent(file));
  if (!fs.existsSync(resolved)) return `${target}: no file ${path.relative(root, resolved)}`;
  if (anchor === undefined || !resolved.endsWith('.md')) return undefined;
  if (!anchors(fs.readFileSync(resolved, 'utf8')).has(decodeURIComponent(anchor))) return `${target}: no heading #${anchor} in ${path.relative(root, resolved)}`;
  return undefined;
}

test("headings get GitHub's ids: backticks and punctuation dropped, repeats numbered, code blocks skipped", () => {
  assert.deepEqual(
    [...anchors('# Upsert orders: `POST /v2/orders`\n### The pixel\'s collector: `POST /v1/collect`\n## Explain an order: `GET /v2/orders/{order_id}/attribution`\n## How the dashboard gets under 2 s\n## Errors\n```sh\n# not a heading\n```\n## Errors\n## Errors')],
    ['upsert-orders-post-v2orders', 'the-pixels-collector-post-v1collect', 'explain-an-order-get-v2ordersorder_idattribution', 'how-the-dashboard-gets-under-2-s', 'errors', 'errors-1', 'errors-2'],
  );
});

for (const page of pages) {
  test(`${page}: every link to a file of the repository, and every #anchor, is found`, () => {
    const broken = linkTargets(fs.readFileSync(path.join(root, page), 'utf8')).flatMap((target) => brokenLink(page, target) ?? []);
    assert.deepEqual(broken, []);
  });
}
