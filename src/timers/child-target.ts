import type pg from 'pg';

/** What a contender's process works on. */
export interface ChildTarget {
  pool: pg.Pool;
  schema: string;
  sinkUrl: string;
  databaseUrl: string;
}

/** Failures are written down, never thrown out of a timer or loop (that would end the process, which is the parent's job). */
export function report(error: unknown): void {
  process.stderr.write(`compare-timers child: ${(error as Error)?.message ?? String(error)}\n`);
}
