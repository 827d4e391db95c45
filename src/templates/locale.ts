import { Drop } from 'liquidjs';

/**
 * Locales and time zones for rendering. A hold names its customer's locale
 * and time zone in its metadata (`locale`, `timeZone`); values that are not
 * well-formed, or that this Node's Intl cannot format, fall back to the
 * configured defaults instead of failing the message. Only locales Intl
 * really supports are accepted, because an unsupported one would silently
 * format in the host's default locale and make output depend on the machine.
 */

export function validLocale(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 35) return undefined;
  try {
    const [canonical] = Intl.getCanonicalLocales(value);
    if (!canonical || Intl.DateTimeFormat.supportedLocalesOf([canonical]).length === 0) return undefined;
    return canonical;
  } catch {
    return undefined;
  }
}

export function validTimeZone(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 64) return undefined;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** `de-CH` -> `de`. */
export const languageOf = (locale: string): string => locale.split('-')[0]!.toLowerCase();

export type LocalTimeStyle = 'full' | 'date' | 'time' | 'weekday' | 'zone' | 'iso';

/**
 * A moment as templates see it: `{{ expiresAt }}` prints date and time in
 * the customer's locale and zone ("Tuesday, 3 March 2026 at 10:00"), and
 * `.date`, `.time`, `.weekday`, `.zone` (the zone's localized name), `.timeZone`
 * (IANA name) and `.iso` (UTC, ISO 8601) give the parts. Every field is an
 * own property, so strict variables and ownPropertyOnly apply unchanged.
 */
export class LocalTime extends Drop {
  readonly full: string;
  readonly date: string;
  readonly time: string;
  readonly weekday: string;
  readonly zone: string;
  readonly timeZone: string;
  readonly iso: string;

  constructor(at: Date, locale: string, timeZone: string) {
    super();
    this.full = formatLocalTime(at, locale, timeZone, 'full');
    this.date = formatLocalTime(at, locale, timeZone, 'date');
    this.time = formatLocalTime(at, locale, timeZone, 'time');
    this.weekday = formatLocalTime(at, locale, timeZone, 'weekday');
    this.zone = formatLocalTime(at, locale, timeZone, 'zone');
    this.timeZone = timeZone;
    this.iso = at.toISOString();
  }

  override valueOf(): string {
    return this.full;
  }
}

export function formatLocalTime(at: Date, locale: string, timeZone: string, style: LocalTimeStyle): string {
  switch (style) {
    case 'full':
      return new Intl.DateTimeFormat(locale, { timeZone, dateStyle: 'full', timeStyle: 'short' }).format(at);
    case 'date':
      return new Intl.DateTimeFormat(locale, { timeZone, dateStyle: 'long' }).format(at);
    case 'time':
      return new Intl.DateTimeFormat(locale, { timeZone, timeStyle: 'short' }).format(at);
    case 'weekday':
      return new Intl.DateTimeFormat(locale, { timeZone, weekday: 'long' }).format(at);
    case 'zone':
      return (
        new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: 'long' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ??
        timeZone
      );
    case 'iso':
      return at.toISOString();
  }
}

export const LOCAL_TIME_STYLES: readonly LocalTimeStyle[] = ['full', 'date', 'time', 'weekday', 'zone', 'iso'];
