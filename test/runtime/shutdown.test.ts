import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { onShutdownSignals } from '../../src/runtime/shutdown.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('two-stage shutdown', () => {
  it('the first signal drains, a second one forces', async () => {
    const exits: number[] = [];
    let finishDrain!: () => void;
    const drained = new Promise<void>((r) => (finishDrain = r));
    const remove = onShutdownSignals(() => drained, silentLogger, { exit: (code) => exits.push(code) });
    try {
      process.emit('SIGTERM');
      expect(exits).toEqual([]); // draining, not exiting
      process.emit('SIGINT');
      expect(exits).toEqual([1]); // forced
      finishDrain();
      await new Promise((r) => setImmediate(r));
      expect(exits).toEqual([1, 0]);
    } finally {
      remove();
    }
  });

  it('a drain that never finishes is forced after the timeout', async () => {
    const exits: number[] = [];
    vi.useFakeTimers();
    const remove = onShutdownSignals(() => new Promise(() => {}), silentLogger, { exit: (code) => exits.push(code), forceAfterMs: 20 });
    try {
      process.emit('SIGTERM');
      await vi.advanceTimersByTimeAsync(19);
      expect(exits).toEqual([]); // still draining
      await vi.advanceTimersByTimeAsync(1);
      expect(exits).toEqual([1]);
    } finally {
      remove();
    }
  });
});
