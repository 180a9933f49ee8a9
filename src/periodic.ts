/**
 * Runs `task` every `intervalMs`, each run after the last has ended, until stopped; a run that
 * fails is handed to `onError` and the next goes on. `stop` aborts the signal the run under way
 * was given, for a run of many steps to end at the next, and waits for it.
 */
export function startPeriodic(
  intervalMs: number,
  task: (signal: AbortSignal) => Promise<unknown>,
  onError: (error: unknown) => void,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const stopping = new AbortController();
  const schedule = () => {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      running = task(stopping.signal).catch(onError).finally(schedule);
    }, intervalMs);
  };
  schedule();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
