import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { scrapeSnapshot } from '../../src/read/snapshot.js';

/** A read the test answers when it chooses: `reads` counts how many were started. */
function controlledRead() {
  const pending: Array<{ resolve: (n: number) => void; reject: (e: Error) => void }> = [];
  return {
    pending,
    get reads() {
      return pending.length;
    },
    read: () => new Promise<number>((resolve, reject) => pending.push({ resolve, reject })),
  };
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('scrapeSnapshot', () => {
  it('a read in flight answers every caller, however long it takes (ttl 0 included)', async () => {
    const r = controlledRead();
    const snapshot = scrapeSnapshot(r.read, 0, 3000);
    const first = snapshot();
    vi.advanceTimersByTime(5);
    const second = snapshot();
    expect(r.reads).toBe(1);
    r.pending[0]!.resolve(7);
    expect(await first).toBe(7);
    expect(await second).toBe(7);
  });

  it('a finished read serves for ttlMs after it began, then the next caller starts a new one', async () => {
    const r = controlledRead();
    const snapshot = scrapeSnapshot(r.read, 500, 3000);
    const first = snapshot();
    r.pending[0]!.resolve(1);
    expect(await first).toBe(1);
    vi.advanceTimersByTime(400);
    expect(await snapshot()).toBe(1);
    expect(r.reads).toBe(1);
    vi.advanceTimersByTime(101);
    const next = snapshot();
    expect(r.reads).toBe(2);
    r.pending[1]!.resolve(2);
    expect(await next).toBe(2);
  });

  it('a failed read is undefined, and the next scrape reads again', async () => {
    const r = controlledRead();
    const snapshot = scrapeSnapshot(r.read, 0, 3000);
    const failed = snapshot();
    r.pending[0]!.reject(new Error('connection refused'));
    expect(await failed).toBeUndefined();
    vi.advanceTimersByTime(1);
    void snapshot();
    expect(r.reads).toBe(2);
  });

  it('a read with no answer is undefined after timeoutMs, and does not hold back later scrapes', async () => {
    const r = controlledRead();
    const snapshot = scrapeSnapshot(r.read, 500, 3000);
    const hung = snapshot();
    vi.advanceTimersByTime(2999);
    expect(snapshot()).toBe(hung);
    expect(r.reads).toBe(1);
    vi.advanceTimersByTime(1);
    expect(await hung).toBeUndefined();
    // The timed-out read counts as finished: past the ttl, a new read starts.
    vi.advanceTimersByTime(1);
    const next = snapshot();
    expect(r.reads).toBe(2);
    r.pending[1]!.resolve(9);
    expect(await next).toBe(9);
  });
});
