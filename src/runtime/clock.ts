/**
 * Where "now" comes from. The default is the database clock: queries use
 * `coalesce($now, now())` and the clock returns null, so worker machines whose
 * clocks disagree still agree on what is due. Tests (and simulations) pass a
 * ManualClock and move time instead of waiting for it.
 */
import { ValidationError } from '../errors.js';

export interface Clock {
  now(): Date | null;
}

export const databaseClock: Clock = { now: () => null };

export class ManualClock implements Clock {
  private current: Date;

  constructor(start: Date | string | number = Date.now()) {
    this.current = instant('start', start);
  }

  now(): Date {
    return new Date(this.current);
  }

  set(to: Date | string | number): void {
    this.current = instant('to', to);
  }

  advance(ms: number): Date {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new ValidationError('ms', 'must be a number of milliseconds');
    this.current = new Date(this.current.getTime() + ms);
    return this.now();
  }
}

/** A Date, an ISO 8601 time or milliseconds since the epoch, as a valid Date; else ValidationError naming the argument. */
function instant(name: string, value: unknown): Date {
  const date = value instanceof Date || typeof value === 'string' || typeof value === 'number' ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new ValidationError(name, 'must be a Date, an ISO 8601 time or milliseconds since the epoch');
  return date;
}
