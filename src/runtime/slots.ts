/**
 * A counting semaphore over a worker's in-flight sends. A round reserves
 * slots before it leases (never more than are free, so the leases of rounds
 * running side by side never exceed the limit together) and gives each one
 * back as its send ends; the next round can then lease while this one is
 * still recording.
 */
export class Slots {
  private free: number;
  private waiters: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`slots: limit must be a positive integer, got ${limit}`);
    this.free = limit;
  }

  get available(): number {
    return this.free;
  }

  /** Reserve up to `wanted` slots, waiting until at least one is free. */
  async reserve(wanted: number): Promise<number> {
    while (this.free === 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
    const taken = Math.min(wanted, this.free);
    this.free -= taken;
    return taken;
  }

  /** Reserve up to `wanted` slots now, without waiting: 0 when none is free. */
  tryReserve(wanted: number): number {
    const taken = Math.min(wanted, this.free);
    this.free -= taken;
    return taken;
  }

  release(n: number): void {
    if (n <= 0) return;
    this.free = Math.min(this.limit, this.free + n);
    const waiting = this.waiters;
    this.waiters = [];
    for (const wake of waiting) wake();
  }
}
