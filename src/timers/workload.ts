/**
 * The workload every contender runs: the same holds, due at the same
 * moments, and the same confirmations racing their deadlines. Pure and
 * seeded, so a run can be repeated.
 */

export interface PlannedHold {
  id: string;
  /** Deadline, in ms after the run's start (t0). */
  dueMs: number;
  /** When the application confirms it (ms after t0), or null: never. */
  confirmAtMs: number | null;
}

export interface Workload {
  holds: PlannedHold[];
  /** The last deadline (ms after t0). */
  lastDueMs: number;
}

export interface WorkloadOptions {
  holds: number;
  /** Deadlines are spread over this many seconds, after the lead. */
  seconds: number;
  seed: number;
  /** Share of holds the application tries to confirm near the deadline. */
  confirmShare?: number;
  /** First deadline, ms after t0: time for the contenders to start. */
  leadMs?: number;
  /** Confirmations land within this many ms either side of the deadline. */
  confirmSpreadMs?: number;
}

/** mulberry32: a small seeded PRNG, so the same --seed gives the same workload. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function planWorkload(options: WorkloadOptions): Workload {
  const random = seededRandom(options.seed);
  const leadMs = options.leadMs ?? 2000;
  const spreadMs = options.confirmSpreadMs ?? 250;
  const share = options.confirmShare ?? 0.25;
  const width = String(options.holds).length;
  const holds: PlannedHold[] = [];
  for (let i = 0; i < options.holds; i++) {
    const dueMs = Math.round(leadMs + (options.seconds * 1000 * i) / Math.max(1, options.holds - 1));
    // A customer confirming at the last moment: the request may land just
    // before the deadline or just after it, while the hold is still held
    // because nothing has expired it yet. Either way exactly one may win.
    const confirms = random() < share;
    const offset = Math.round((random() * 2 - 1) * spreadMs);
    holds.push({ id: `hold-${String(i + 1).padStart(width, '0')}`, dueMs, confirmAtMs: confirms ? Math.max(0, dueMs + offset) : null });
  }
  return { holds, lastDueMs: holds.reduce((max, h) => Math.max(max, h.dueMs), 0) };
}
