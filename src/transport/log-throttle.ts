// One log line per interval for an error that every request of an outage hits
// (thousands a minute under load): the first is logged at once, the others are
// counted and the count goes with the next line.
export class LogThrottle {
  private last = -Infinity;
  private suppressed = 0;

  constructor(private readonly intervalMs = 5_000) {}

  /** Calls `write(suppressedSinceLast)` when a line is due; otherwise counts this one. */
  run(write: (suppressed: number) => void): void {
    const now = performance.now();
    if (now - this.last < this.intervalMs) {
      this.suppressed++;
      return;
    }
    this.last = now;
    const n = this.suppressed;
    this.suppressed = 0;
    write(n);
  }
}

/** Shared by every front door of a process: the database is one. */
export const databaseUnavailableLog = new LogThrottle();
