import { describe, expect, it } from 'vitest';
import { formatLocalTime, LOCAL_TIME_STYLES } from '../../src/templates/locale.js';

const STYLE_OPTIONS = {
  full: { dateStyle: 'full', timeStyle: 'short' },
  date: { dateStyle: 'long' },
  time: { timeStyle: 'short' },
  weekday: { weekday: 'long' },
} as const;

/** What Intl says, with no cache in between. */
function direct(at: Date, locale: string, timeZone: string, style: string): string {
  if (style === 'iso') return at.toISOString();
  if (style === 'zone') {
    return new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: 'long' }).formatToParts(at).find((p) => p.type === 'timeZoneName')!.value;
  }
  return new Intl.DateTimeFormat(locale, { timeZone, ...STYLE_OPTIONS[style as keyof typeof STYLE_OPTIONS] }).format(at);
}

describe('formatLocalTime', () => {
  it('answers from its per-minute cache exactly what Intl answers, at every second of a minute and across a DST change', () => {
    // Europe/Berlin moves from CET to CEST at 2026-03-29 01:00 UTC; Lord Howe shifts by 30 minutes.
    const cases: Array<[string, string, number]> = [
      ['de-DE', 'Europe/Berlin', Date.UTC(2026, 2, 29, 0, 58, 0)],
      ['en-US', 'Australia/Lord_Howe', Date.UTC(2026, 3, 4, 14, 58, 0)],
      ['en-GB', 'America/New_York', Date.UTC(2026, 10, 1, 5, 58, 0)],
    ];
    for (const [locale, zone, start] of cases) {
      // Three minutes in 7-second steps, each asked twice (the second from the cache).
      for (let t = start; t < start + 180_000; t += 7_000) {
        for (const style of LOCAL_TIME_STYLES) {
          const at = new Date(t);
          const want = direct(at, locale, zone, style);
          expect(formatLocalTime(at, locale, zone, style)).toBe(want);
          expect(formatLocalTime(new Date(t + 1), locale, zone, style)).toBe(style === 'iso' ? new Date(t + 1).toISOString() : want);
        }
      }
    }
  });

  it('tells the two sides of a DST change apart', () => {
    const before = formatLocalTime(new Date(Date.UTC(2026, 2, 29, 0, 59, 59)), 'en', 'Europe/Berlin', 'zone');
    const after = formatLocalTime(new Date(Date.UTC(2026, 2, 29, 1, 0, 0)), 'en', 'Europe/Berlin', 'zone');
    expect(before).toBe('Central European Standard Time');
    expect(after).toBe('Central European Summer Time');
  });
});
