import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { startPeriodic } from '../src/periodic.js';

test('a run that fails is handed on, and the next runs', async () => {
  const errors: unknown[] = [];
  let runs = 0;
  const periodic = startPeriodic(
    1,
    async () => {
      if (++runs === 1) throw new Error('the first run failed');
    },
    (error) => errors.push(error),
  );
  while (runs < 3) await sleep(1);
  await periodic.stop();
  assert.deepEqual(errors.map((error) => (error as Error).message), ['the first run failed']);
});

test('stopping aborts the run under way, waits for it, and runs nothing after', { timeout: 5_000 }, async () => {
  let runs = 0;
  let ended = false;
  let started: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const periodic = startPeriodic(
    1,
    async (signal) => {
      if (++runs < 2) return;
      started();
      // A run of many steps: it goes on until told to stop.
      while (!signal.aborted) await sleep(1);
      await sleep(20);
      ended = true;
    },
    (error) => assert.fail(error as Error),
  );
  await running;
  await periodic.stop();
  assert.equal(ended, true, 'stop waited for the run');
  const after = runs;
  await sleep(20);
  assert.equal(runs, after);
});
