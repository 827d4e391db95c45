/**
 * The two counters behind the /v1 token check, pure (time comes in as
 * `now`, so tests move it instead of waiting). Both are bounded in memory:
 * a flood of addresses or names evicts the oldest, it does not grow them.
 */

const MINUTE_MS = 60_000;

/**
 * Refused tokens per client address: the `perMinute`-th failure within a
 * minute locks the address out for `lockoutMs` (every call from it is a
 * 429, a right token included, so guessing learns nothing during it).
 */
export class FailureLimiter {
  private readonly clients = new Map<string, { windowStart: number; failures: number; lockedUntil: number }>();
  private readonly perMinute: number;
  private readonly lockoutMs: number;
  private readonly now: () => number;
  private readonly maxClients: number;

  constructor(options: { perMinute: number; lockoutMs: number; now: () => number; maxClients?: number }) {
    this.perMinute = options.perMinute;
    this.lockoutMs = options.lockoutMs;
    this.now = options.now;
    this.maxClients = options.maxClients ?? 10_000;
  }

  /** Seconds (rounded up) the address stays locked out; 0 when it may try. */
  lockedForSeconds(address: string): number {
    const state = this.clients.get(address);
    const left = state ? state.lockedUntil - this.now() : 0;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Count one refused token; true when this failure locked the address out. */
  fail(address: string): boolean {
    const now = this.now();
    let state = this.clients.get(address);
    if (!state || now - state.windowStart >= MINUTE_MS) {
      this.clients.delete(address);
      if (this.clients.size >= this.maxClients) this.clients.delete(this.clients.keys().next().value!);
      state = { windowStart: now, failures: 0, lockedUntil: 0 };
      this.clients.set(address, state);
    }
    state.failures += 1;
    if (state.failures >= this.perMinute && state.lockedUntil <= now) {
      state.lockedUntil = now + this.lockoutMs;
      // The lockout outlives the minute it started in.
      state.windowStart = now + this.lockoutMs - MINUTE_MS;
      state.failures = 0;
      return true;
    }
    return false;
  }
}

/**
 * At most `perMinute` audit entries of refusals per token name a minute
 * (unknown tokens share the name `unknown`); the refusals past it are
 * counted and reported on the next entry that is written (`notRecorded`).
 */
export class RefusalSampler {
  private readonly names = new Map<string, { windowStart: number; written: number; skipped: number }>();
  private readonly perMinute: number;
  private readonly now: () => number;

  constructor(options: { perMinute: number; now: () => number }) {
    this.perMinute = options.perMinute;
    this.now = options.now;
  }

  /** Whether to write this refusal's entry, and how many were left out before it. */
  admit(name: string): { suppressed: number } | undefined {
    const now = this.now();
    let state = this.names.get(name);
    if (!state || now - state.windowStart >= MINUTE_MS) {
      const skipped = state?.skipped ?? 0;
      this.names.delete(name);
      if (this.names.size >= 10_000) this.names.delete(this.names.keys().next().value!);
      state = { windowStart: now, written: 0, skipped };
      this.names.set(name, state);
    }
    if (state.written >= this.perMinute) {
      state.skipped += 1;
      return undefined;
    }
    state.written += 1;
    const suppressed = state.skipped;
    state.skipped = 0;
    return { suppressed };
  }
}
