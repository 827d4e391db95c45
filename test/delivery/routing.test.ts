import { describe, expect, it } from 'vitest';
import { keepsIntents, legsFor, nextAccount, type AccountCondition } from '../../src/delivery/routing.js';

const ok: AccountCondition = { paused: false };
const paused: AccountCondition = { paused: true };
const conditions = (entries: Record<string, AccountCondition>) => new Map(Object.entries(entries));

describe('which account sends an intent', () => {
  it('an account keeps its intents unless paused or cooling down past the threshold', () => {
    expect(keepsIntents(undefined, 60_000)).toBe(true); // no row yet: nothing stops it
    expect(keepsIntents(ok, 60_000)).toBe(true);
    expect(keepsIntents(paused, 60_000)).toBe(false);
    expect(keepsIntents({ paused: false, coolingForMs: 60_000 }, 60_000)).toBe(true);
    expect(keepsIntents({ paused: false, coolingForMs: 60_001 }, 60_000)).toBe(false);
  });

  it('all open: each account sends its own', () => {
    expect(legsFor(['a', 'b', 'c'], conditions({ a: ok, b: ok, c: ok }), 60_000)).toEqual([
      { account: 'a', from: ['a'] },
      { account: 'b', from: ['b'] },
      { account: 'c', from: ['c'] },
    ]);
  });

  it("a paused account's intents go to the next that keeps its own, wrapping round", () => {
    expect(legsFor(['a', 'b', 'c'], conditions({ a: paused, b: ok, c: ok }), 60_000)).toEqual([
      { account: 'b', from: ['b', 'a'] },
      { account: 'c', from: ['c'] },
    ]);
    expect(legsFor(['a', 'b', 'c'], conditions({ a: paused, b: paused, c: ok }), 60_000)).toEqual([{ account: 'c', from: ['c', 'b', 'a'] }]);
    // The last one's intents wrap round to the first.
    expect(legsFor(['a', 'b', 'c'], conditions({ a: ok, b: ok, c: paused }), 60_000)).toEqual([
      { account: 'a', from: ['a', 'c'] },
      { account: 'b', from: ['b'] },
    ]);
  });

  it('every account stopped: no legs, nothing is sent anywhere', () => {
    expect(legsFor(['a', 'b'], conditions({ a: paused, b: { paused: false, coolingForMs: 120_000 } }), 60_000)).toEqual([]);
  });

  it('the next account after a send that never left wraps round; one account has none', () => {
    expect(nextAccount(['a', 'b', 'c'], 'a')).toBe('b');
    expect(nextAccount(['a', 'b', 'c'], 'c')).toBe('a');
    expect(nextAccount(['a'], 'a')).toBeUndefined();
  });
});
