import { describe, expect, it } from 'vitest';
import { remember } from '../src/remember.js';

describe('remember', () => {
  it('computes a key once, an undefined answer included', () => {
    const cache = new Map<string, string | undefined>();
    let calls = 0;
    const compute = (value: string | undefined) => () => {
      calls++;
      return value;
    };
    expect(remember(cache, 'a', compute('A'))).toBe('A');
    expect(remember(cache, 'a', compute('other'))).toBe('A');
    expect(remember(cache, 'none', compute(undefined))).toBeUndefined();
    expect(remember(cache, 'none', compute('other'))).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('drops the whole map once it holds `most`, and keeps the new answer', () => {
    const cache = new Map<string, number>();
    for (let i = 0; i < 3; i++) remember(cache, `k${i}`, () => i, 3);
    expect(cache.size).toBe(3);
    expect(remember(cache, 'k3', () => 3, 3)).toBe(3);
    expect([...cache.keys()]).toEqual(['k3']);
  });
});
