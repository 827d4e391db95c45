/**
 * Where "now" comes from. The default is the database clock: queries use
 * `coalesce($now, now())` and the clock returns null, so worker machines whose
 * clocks disagree still agree on what is due. Tests (and simulations) pass a
 * ManualClock and move time instead of waiting for it.
 */
export interface Clock {
  now(): Date | null;
}

export const databaseClock: Clock = { now: () => null };

export class ManualClock implements Clock {
  private current: Date;

  constructor(start: Date | string | number = Date.now()) {
    this.current = new Date(start);
  }

  now(): Date {
    return new Date(this.current);
  }

  set(to: Date | string | number): void {
    this.current = new Date(to);
  }

  advance(ms: number): Date {
    this.current = new Date(this.current.getTime() + ms);
    return this.now();
  }
}
