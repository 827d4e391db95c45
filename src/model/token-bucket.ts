/**
 * Token bucket arithmetic, pure: `burst` permits at most, refilled at
 * `perSecond`. The shared limiter runs the same formula in SQL against the
 * database clock (src/ratelimit/limiter.ts); this copy serves in-process
 * limits (the sandbox provider's own quota) and states the rules in one
 * place that tests can check without a database.
 */
export interface BucketPolicy {
  perSecond: number;
  burst: number;
}

export interface BucketState {
  tokens: number;
  refilledAtMs: number;
}

export function refill(state: BucketState, policy: BucketPolicy, nowMs: number): BucketState {
  const elapsed = Math.max(0, nowMs - state.refilledAtMs) / 1000;
  return { tokens: Math.min(policy.burst, state.tokens + elapsed * policy.perSecond), refilledAtMs: Math.max(nowMs, state.refilledAtMs) };
}

/** Take up to `want` whole permits; returns how many were granted and the new state. */
export function take(state: BucketState, policy: BucketPolicy, want: number, nowMs: number): { granted: number; state: BucketState } {
  const current = refill(state, policy, nowMs);
  const granted = Math.max(0, Math.min(want, Math.floor(current.tokens)));
  return { granted, state: { ...current, tokens: current.tokens - granted } };
}

/** Milliseconds until `want` whole permits will be available (0 if they are now). */
export function waitMs(state: BucketState, policy: BucketPolicy, want: number, nowMs: number): number {
  const current = refill(state, policy, nowMs);
  const missing = Math.min(want, policy.burst) - current.tokens;
  return missing <= 0 ? 0 : Math.ceil((missing / policy.perSecond) * 1000);
}

/** A mutable bucket over the pure functions, for in-process use. */
export class TokenBucket {
  private state: BucketState;

  constructor(
    private readonly policy: BucketPolicy,
    nowMs: number = Date.now(),
  ) {
    this.state = { tokens: policy.burst, refilledAtMs: nowMs };
  }

  take(want: number, nowMs: number = Date.now()): number {
    const result = take(this.state, this.policy, want, nowMs);
    this.state = result.state;
    return result.granted;
  }

  waitMs(want: number, nowMs: number = Date.now()): number {
    return waitMs(this.state, this.policy, want, nowMs);
  }
}
