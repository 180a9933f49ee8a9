/**
 * Runs `task` every `intervalMs`, each run after the last has ended, until stopped; a run that
 * fails is handed to `onError` and the next goes on. `stop` waits for the run under way.
 */
export function startPeriodic(intervalMs: number, task: () => Promise<unknown>, onError: (error: unknown) => void): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = task().catch(onError).finally(schedule);
    }, intervalMs);
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
