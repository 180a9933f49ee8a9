import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decide, memoryStore, type Policy } from '../src/rate-limit/window.js';

const policy: Policy = { name: 'p', limit: 10, windowSeconds: 60, unit: 'requests' };
const at = (seconds: number) => 600_000 + seconds * 1000; // window boundaries fall on whole minutes

test('the sliding window weighs the previous minute by the share of it still covered', async () => {
  const store = memoryStore();
  for (let i = 0; i < 10; i++) assert.equal((await store.consume('k', 1, 10, 60_000, at(50))).allowed, true);
  // 30 s into the next minute: half of the previous minute's 10 still counts.
  const half = await store.consume('k', 5, 10, 60_000, at(90));
  assert.deepEqual(half, { allowed: true, previous: 10, current: 5 });
  assert.equal((await store.consume('k', 1, 10, 60_000, at(90))).allowed, false, '5 + 5 is the limit');
  assert.equal((await store.consume('k', 1, 10, 60_000, at(97))).allowed, true, 'at 37 s, 10 × 23/60 + 5 < 10');
  await store.close();
});

test('a refusal says when the same request would pass: while the previous minute fades, or after the current one', () => {
  // At 30 s, 10 from the previous minute weigh 5; 6 more would make 11: 1 must fade, 6 s at 10 a minute.
  assert.deepEqual(decide(policy, { allowed: false, previous: 10, current: 0 }, 6, at(30)), {
    allowed: false,
    remaining: 5,
    resetSeconds: 30,
    retryAfterSeconds: 6,
  });
  // Nothing from the previous minute and 8 in this one, at 45 s: 3 more fit only once the 8 have
  // faded to 7 in the next minute, 7.5 s into it: 15 s + 7.5 s.
  assert.equal(decide(policy, { allowed: false, previous: 0, current: 8 }, 3, at(45)).retryAfterSeconds, 23);
  assert.equal(decide(policy, { allowed: true, previous: 0, current: 4 }, 1, at(45)).remaining, 6);
});
