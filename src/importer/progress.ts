/**
 * How an import shows its progress on stderr: a bar on a terminal (records done, rate, ETA), a
 * plain line every few seconds otherwise (a log, a CI job). The part of the file read is the
 * measure: the number of records is not known before the end.
 */
import cliProgress from 'cli-progress';
import type { Progress, Summary } from './run.js';

const LINE_INTERVAL_MS = 10_000;

const done = (summary: Summary) => summary.sent + summary.rejected + summary.skipped;

function eta(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const whole = Math.round(seconds);
  return whole >= 3600 ? `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m` : `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
}

export function createProgress(size: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const started = performance.now();
  const rate = (summary: Summary) => Math.round(done(summary) / Math.max(0.001, (performance.now() - started) / 1000));
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      { stream, format: '{bar} {percentage}% | {records} records | {rate}/s | ETA {eta_formatted}', hideCursor: true, fps: 5 },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(size, 1), 0, { records: 0, rate: 0 });
    return {
      update: (summary, bytesRead) => bar.update(bytesRead, { records: done(summary), rate: rate(summary) }),
      stop: (summary, bytesRead) => {
        bar.update(bytesRead, { records: done(summary), rate: rate(summary) });
        bar.stop();
      },
    };
  }
  let last = started;
  const line = (summary: Summary, bytesRead: number) => {
    const elapsed = (performance.now() - started) / 1000;
    const share = size > 0 ? bytesRead / size : 1;
    stream.write(`${done(summary)} records, ${rate(summary)}/s, ${Math.floor(share * 100)}% of the file, ETA ${eta((elapsed / share) * (1 - share))}\n`);
  };
  return {
    update(summary, bytesRead) {
      if (performance.now() - last < LINE_INTERVAL_MS) return;
      last = performance.now();
      line(summary, bytesRead);
    },
    stop: line,
  };
}
