import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/runtime/slots.js';

describe('Slots', () => {
  it('reserves at most what is free, and waits when nothing is', async () => {
    const slots = new Slots(10);
    expect(await slots.reserve(6)).toBe(6);
    expect(await slots.reserve(6)).toBe(4);
    expect(slots.available).toBe(0);
    let got: number | undefined;
    const waiting = slots.reserve(5).then((n) => (got = n));
    await new Promise((r) => setImmediate(r));
    expect(got).toBeUndefined();
    slots.release(3);
    await waiting;
    expect(got).toBe(3);
    expect(slots.available).toBe(0);
  });

  it('never holds more free slots than its limit, and refuses a limit below one', () => {
    const slots = new Slots(2);
    slots.release(5);
    expect(slots.available).toBe(2);
    slots.release(0);
    slots.release(-1);
    expect(slots.available).toBe(2);
    expect(() => new Slots(0)).toThrow(/positive integer/);
    expect(() => new Slots(1.5)).toThrow(/positive integer/);
  });
});
