import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observability/logger.js';
import { onShutdownSignals } from '../../src/runtime/shutdown.js';
import { ServiceLoop } from '../../src/runtime/loop.js';

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
    const remove = onShutdownSignals(() => new Promise(() => {}), silentLogger, { exit: (code) => exits.push(code), forceAfterMs: 20 });
    try {
      process.emit('SIGTERM');
      await new Promise((r) => setTimeout(r, 60));
      expect(exits).toEqual([1]);
    } finally {
      remove();
    }
  });
});

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
    await new Promise((r) => setImmediate(r));
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false); // the tick is still running
    release();
    await stopping;
    await loop.stop();
    expect(ticks).toBe(1);
  });

  it('backs off and keeps going when a tick throws', async () => {
    let ticks = 0;
    const loop = new ServiceLoop({
      name: 'test',
      intervalMs: 1,
      logger: silentLogger,
      maxBackoffMs: 5,
      tick: async () => {
        ticks += 1;
        if (ticks < 3) throw new Error('connection terminated');
        return { full: false };
      },
    });
    loop.start();
    while (ticks < 4) await new Promise((r) => setTimeout(r, 5));
    await loop.stop();
    expect(ticks).toBeGreaterThanOrEqual(4);
  });
});
