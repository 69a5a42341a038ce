// The progress bar drawn on stderr while a job runs (only on a terminal, never with --json):
// tasks done out of done + queued, objects, findings and credits.
import cliProgress from 'cli-progress';
import type { JobStatus } from '../types.ts';
import type { Terminal } from './terminal.ts';

export interface JobProgress {
  update(job: JobStatus): void;
  stop(): void;
}

const silent: JobProgress = { update() {}, stop() {} };

function credits(job: JobStatus, budget: number | undefined): string {
  if (job.ledger) return `${job.ledger.captured}/${job.ledger.reserved}`;
  return budget === undefined ? '…' : `≤${budget}`;
}

/** `budget`: the credits reserved for the job when the caller knows them (a scan's maxCredits). */
export function jobProgress(term: Terminal, budget?: number): JobProgress {
  if (!term.interactive) return silent;
  const c = term.colors;
  const bar = new cliProgress.SingleBar({
    stream: process.stderr,
    format: `${c.cyan('{bar}')} {percentage}% | {status} | tasks {value}/{total} | objects {objects} | findings {findings} | credits {credits}`,
    barCompleteChar: '█',
    barIncompleteChar: '░',
    barsize: 24,
    hideCursor: true,
    clearOnComplete: false,
    // Every status read is drawn at once: job updates are a second apart, not a render loop.
    synchronousUpdate: true,
    fps: 5,
  });
  let started = false;
  return {
    update(job) {
      const total = Math.max(1, job.progress.tasksDone + job.progress.tasksQueued);
      const payload = {
        status: job.status,
        objects: job.progress.objects,
        findings: job.progress.findings,
        credits: credits(job, budget),
      };
      if (!started) {
        bar.start(total, job.progress.tasksDone, payload);
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(job.progress.tasksDone, payload);
      }
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}
