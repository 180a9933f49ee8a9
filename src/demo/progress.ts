/**
 * How the demo shows its progress on stderr: a bar on a terminal (records sent of the total,
 * known in advance), a plain line every few seconds otherwise (a log, a CI job), as the
 * importer does (src/importer/progress.ts).
 */
import cliProgress from 'cli-progress';

const LINE_INTERVAL_MS = 5_000;

export interface SendProgress {
  /** `sent` records of the total are stored; `kind` names what is being sent now. */
  update(sent: number, kind: string): void;
  stop(sent: number): void;
}

const grouped = (n: number) => n.toLocaleString('en-US');

export function createSendProgress(total: number, stream: NodeJS.WriteStream = process.stderr): SendProgress {
  const started = performance.now();
  const rate = (sent: number) => Math.round(sent / Math.max(0.001, (performance.now() - started) / 1000));
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      { stream, format: '{bar} {percentage}% | {value}/{total} records | {rate}/s | {kind} | ETA {eta_formatted}', hideCursor: true, fps: 5 },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(total, 1), 0, { rate: 0, kind: '' });
    return {
      update: (sent, kind) => bar.update(sent, { rate: rate(sent), kind }),
      stop: (sent) => {
        bar.update(sent, { rate: rate(sent) });
        bar.stop();
      },
    };
  }
  let last = started;
  const line = (sent: number, kind?: string) =>
    stream.write(`${grouped(sent)} of ${grouped(total)} records sent (${Math.floor((sent / Math.max(total, 1)) * 100)}%), ${grouped(rate(sent))}/s${kind ? `, now ${kind}` : ''}\n`);
  return {
    update(sent, kind) {
      if (performance.now() - last < LINE_INTERVAL_MS) return;
      last = performance.now();
      line(sent, kind);
    },
    stop: (sent) => line(sent),
  };
}
