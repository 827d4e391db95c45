import { describe, expect, it } from 'vitest';
import { remaining, remainingUnit } from '../../src/templates/remaining.js';

const deadline = new Date('2026-03-03T09:40:00Z');
/** The render moment `seconds` before the deadline. */
const before = (seconds: number) => new Date(deadline.getTime() - seconds * 1000);

describe('remaining', () => {
  it('says the time left in words in the largest sensible unit, rounded', () => {
    const cases: Array<[number, string]> = [
      [45, 'in 45 seconds'],
      [59.4, 'in 59 seconds'],
      // Rounded to whole seconds first: never "in 60 seconds".
      [59.7, 'in 1 minute'],
      [5 * 60, 'in 5 minutes'],
      [5 * 60 - 20, 'in 5 minutes'],
      [89 * 60, 'in 89 minutes'],
      [90 * 60, 'in 2 hours'],
      [2 * 3600, 'in 2 hours'],
      [47 * 3600, 'in 47 hours'],
      [48 * 3600, 'in 2 days'],
      [10 * 86400 + 3600, 'in 10 days'],
    ];
    for (const [seconds, words] of cases) expect(remaining(deadline, before(seconds), 'en').words, String(seconds)).toBe(words);
  });

  it("uses the message's locale", () => {
    expect(remaining(deadline, before(300), 'de').words).toBe('in 5 Minuten');
    expect(remaining(deadline, before(300), 'de-CH').words).toBe('in 5 Minuten');
    expect(remaining(deadline, before(3 * 3600), 'de').words).toBe('in 3 Stunden');
    expect(remaining(deadline, before(60), 'de').words).toBe('in 1 Minute');
  });

  it('gives whole seconds, and none once the deadline has passed: never "ago"', () => {
    expect(remaining(deadline, before(300.4), 'en')).toEqual({ words: 'in 5 minutes', seconds: 300 });
    expect(remaining(deadline, deadline, 'en')).toEqual({ words: 'now', seconds: 0 });
    expect(remaining(deadline, before(-120), 'en')).toEqual({ words: 'now', seconds: 0 });
    expect(remaining(deadline, before(-120), 'de')).toEqual({ words: 'jetzt', seconds: 0 });
  });

  it('picks the unit at the documented boundaries', () => {
    expect(remainingUnit(59)).toEqual({ value: 59, unit: 'second' });
    expect(remainingUnit(60)).toEqual({ value: 1, unit: 'minute' });
    expect(remainingUnit(90 * 60 - 1)).toEqual({ value: 90, unit: 'minute' });
    expect(remainingUnit(90 * 60)).toEqual({ value: 2, unit: 'hour' });
    expect(remainingUnit(48 * 3600 - 1)).toEqual({ value: 48, unit: 'hour' });
    expect(remainingUnit(48 * 3600)).toEqual({ value: 2, unit: 'day' });
  });
});
