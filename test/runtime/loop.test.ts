import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { ServiceLoop, type TickResult } from '../../src/runtime/loop.js';

/**
 * The service loop under fake timers: time is moved, never waited for, so
 * the back-off schedule is asserted to the millisecond. Its jitter draws from
 * Math.random, pinned per test.
 */
beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A loop whose ticks follow `script` (an Error is thrown), recording when each tick started. */
function scripted(script: (n: number) => TickResult | Error, options: { intervalMs?: number; maxBackoffMs?: number } = {}) {
  const times: number[] = [];
  const loop = new ServiceLoop({
    name: 'test',
    intervalMs: options.intervalMs ?? 1000,
    logger: silentLogger,
    ...(options.maxBackoffMs !== undefined ? { maxBackoffMs: options.maxBackoffMs } : {}),
    tick: async () => {
      times.push(Date.now());
      const next = script(times.length);
      if (next instanceof Error) throw next;
      return next;
    },
  });
  const gaps = () => times.slice(1).map((t, i) => t - times[i]!);
  return { loop, times, gaps };
}

const failing = new Error('connection terminated');

describe('service loop', () => {
  it('stop() waits for the tick in flight and is idempotent', async () => {
    let release!: () => void;
    let ticks = 0;
    const loop = new ServiceLoop({
      name: 'test',
      intervalMs: 10,
      logger: silentLogger,
      tick: async () => {
        ticks += 1;
        await new Promise<void>((r) => (release = r));
        return { full: false };
      },
    });
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(stopped).toBe(false); // the tick is still running
    release();
    await stopping;
    await loop.stop();
    expect(ticks).toBe(1);
    expect(loop.isRunning).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('backs off and keeps going when a tick throws', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0); // the shortest sleep of each window
    const { loop, times, gaps } = scripted((n) => (n <= 8 ? failing : { full: false }));
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(times).toEqual([0]);
    // Half of a window of 100 ms * 2^errors, capped at 10 s: 100, 200, 400 ... 5,000, 5,000.
    const backoff = [100, 200, 400, 800, 1600, 3200, 5000, 5000];
    for (const ms of backoff) {
      await vi.advanceTimersByTimeAsync(ms - 1);
      const before = times.length;
      await vi.advanceTimersByTimeAsync(1);
      expect(times.length).toBe(before + 1); // not a millisecond early, not late
    }
    // The ninth tick succeeded: the loop is back on its interval.
    await vi.advanceTimersByTimeAsync(1000);
    expect(gaps()).toEqual([...backoff, 1000]);
    await loop.stop();
  });

  it('jitters each back-off over the upper half of its window', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const { loop, gaps } = scripted(() => failing);
    loop.start();
    await vi.advanceTimersByTimeAsync(30_000);
    await loop.stop();
    // window 200, 400, 800 ...: three quarters of it with random() = 0.5; the cap holds the window at 10 s.
    expect(gaps().slice(0, 8)).toEqual([150, 300, 600, 1200, 2400, 4800, 7500, 7500]);
  });

  it('maxBackoffMs caps the window', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const { loop, gaps } = scripted(() => failing, { maxBackoffMs: 1000 });
    loop.start();
    await vi.advanceTimersByTimeAsync(3000);
    await loop.stop();
    expect(gaps().slice(0, 6)).toEqual([100, 200, 400, 500, 500, 500]);
  });

  it('a successful tick resets the back-off to its first step', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const { loop, gaps } = scripted((n) => ([1, 2, 3, 5].includes(n) ? failing : { full: false }));
    loop.start();
    await vi.advanceTimersByTimeAsync(2000);
    await loop.stop();
    // errors 1-3 back off 100, 200, 400; tick 4 succeeds (interval 1000); tick 5's error starts again at 100.
    expect(gaps().slice(0, 5)).toEqual([100, 200, 400, 1000, 100]);
  });

  it('runs again at once while batches come back full, and sleeps until work is due otherwise', async () => {
    const { loop, gaps } = scripted((n) => (n <= 3 ? { full: true } : { full: false, nextInMs: n === 4 ? 250 : 5000 }));
    loop.start();
    await vi.advanceTimersByTimeAsync(2000);
    await loop.stop();
    expect(gaps().slice(0, 5)).toEqual([0, 0, 0, 250, 1000]); // nextInMs past the interval is capped by it
  });

  it('stop() during a back-off returns without waiting it out, and no tick follows', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const { loop, times } = scripted(() => failing);
    loop.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(times).toHaveLength(1); // now sleeping 100 ms
    await loop.stop(); // resolves with the clock standing still
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(times).toHaveLength(1);
  });

  it('wake() cuts an interval sleep short', async () => {
    const { loop, times } = scripted(() => ({ full: false }));
    loop.start();
    await vi.advanceTimersByTimeAsync(10);
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(times).toEqual([0, 10]);
    await loop.stop();
  });
});

describe('wake-ups', () => {
  it('one that arrives during a tick is not lost: the next tick follows at once, not after the interval', async () => {
    let loop: ServiceLoop | undefined;
    const times: number[] = [];
    loop = new ServiceLoop({
      name: 'test',
      intervalMs: 10_000,
      logger: silentLogger,
      tick: async () => {
        times.push(Date.now());
        await new Promise((r) => setTimeout(r, 50));
        // New work arrives while this tick is busy (a NOTIFY), after it looked.
        if (times.length === 1) loop!.wake();
        return { full: false };
      },
    });
    expect(loop.isSleeping).toBe(false);
    loop.start();
    await vi.advanceTimersByTimeAsync(200);
    expect(times).toEqual([0, 50]);
    // No wake during the second tick: it sleeps the interval.
    expect(loop.isSleeping).toBe(true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(times).toHaveLength(2);
    loop.wake();
    await vi.advanceTimersByTimeAsync(100);
    expect(times).toHaveLength(3);
    await loop.stop();
  });

  it('one that arrives during a failing tick does not skip the back-off', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    let loop: ServiceLoop | undefined;
    const times: number[] = [];
    loop = new ServiceLoop({
      name: 'test',
      intervalMs: 1000,
      logger: silentLogger,
      tick: async () => {
        times.push(Date.now());
        loop!.wake();
        throw failing;
      },
    });
    loop.start();
    await vi.advanceTimersByTimeAsync(1000);
    // Back-off 200 ms x (0.5 + 0.5 x 0.5) = 150, then 300, then 600: never at once.
    expect(times.slice(0, 3)).toEqual([0, 150, 450]);
    await loop.stop();
  });
});

describe('a round that never ends', () => {
  it('is given up on after tickTimeoutMs: the loop backs off and runs again instead of stopping for good', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const times: number[] = [];
    const loop = new ServiceLoop({
      name: 'test',
      intervalMs: 100,
      logger: silentLogger,
      tickTimeoutMs: 5000,
      tick: async () => {
        times.push(Date.now());
        // The first round hangs for ever (an await that never settles); later ones work.
        if (times.length === 1) await new Promise(() => {});
        return { full: false };
      },
    });
    loop.start();
    await vi.advanceTimersByTimeAsync(4999);
    expect(times).toEqual([0]);
    // Given up at 5000, then the first back-off (200 ms x 0.5 with no jitter).
    await vi.advanceTimersByTimeAsync(101);
    expect(times).toEqual([0, 5100]);
    await vi.advanceTimersByTimeAsync(100);
    expect(times).toEqual([0, 5100, 5200]);
    await loop.stop();
  });

  it('shows in the age of the last finished round, which a working loop keeps near its interval', async () => {
    let hang = false;
    const loop = new ServiceLoop({
      name: 'test',
      intervalMs: 1000,
      logger: silentLogger,
      tick: async () => {
        if (hang) await new Promise(() => {});
        return { full: false };
      },
    });
    expect(loop.lastRoundAgeSeconds()).toBeUndefined();
    loop.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(loop.lastRoundAgeSeconds()).toBeLessThanOrEqual(1);
    hang = true;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(loop.lastRoundAgeSeconds()).toBeGreaterThanOrEqual(59);
    // stop() would wait for the hung round: not called; the loop is dropped with the test.
  });
});
