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
  return remember(locales, value, () => {
    try {
      const [canonical] = Intl.getCanonicalLocales(value);
      if (!canonical || Intl.DateTimeFormat.supportedLocalesOf([canonical]).length === 0) return undefined;
      return canonical;
    } catch {
      return undefined;
    }
  });
}

export function validTimeZone(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 64) return undefined;
  return remember(zones, value, () => {
    try {
      return new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone;
    } catch {
      return undefined;
    }
  });
}

// Asking Intl is slow (it builds a formatter) and a fleet sees few distinct
// values, so answers are kept, in bounded maps.
const locales = new Map<string, string | undefined>();
const zones = new Map<string, string | undefined>();
const MAX_REMEMBERED = 1000;

function remember<V>(cache: Map<string, V>, key: string, compute: () => V): V {
  if (cache.has(key)) return cache.get(key)!;
  if (cache.size >= MAX_REMEMBERED) cache.clear();
  const value = compute();
  cache.set(key, value);
  return value;
}

/** `de-CH` -> `de`. */
export const languageOf = (locale: string): string => locale.split('-')[0]!.toLowerCase();

export type LocalTimeStyle = 'full' | 'date' | 'time' | 'weekday' | 'zone' | 'iso';

/**
 * A moment as templates see it: `{{ expiresAt }}` prints date and time in
 * the customer's locale and zone ("Tuesday, 3 March 2026 at 10:00"), and
 * `.date`, `.time`, `.weekday`, `.zone` (the zone's localized name), `.timeZone`
 * (IANA name) and `.iso` (UTC, ISO 8601) give the parts, each formatted only
 * when a template asks for it. Anything else is an undefined variable.
 * The inputs are #private: a template cannot reach them.
 */
export class LocalTime extends Drop {
  readonly #at: Date;
  readonly #locale: string;
  readonly #timeZone: string;

  constructor(at: Date, locale: string, timeZone: string) {
    super();
    this.#at = at;
    this.#locale = locale;
    this.#timeZone = timeZone;
  }

  get full(): string {
    return formatLocalTime(this.#at, this.#locale, this.#timeZone, 'full');
  }
  get date(): string {
    return formatLocalTime(this.#at, this.#locale, this.#timeZone, 'date');
  }
  get time(): string {
    return formatLocalTime(this.#at, this.#locale, this.#timeZone, 'time');
  }
  get weekday(): string {
    return formatLocalTime(this.#at, this.#locale, this.#timeZone, 'weekday');
  }
  get zone(): string {
    return formatLocalTime(this.#at, this.#locale, this.#timeZone, 'zone');
  }
  get timeZone(): string {
    return this.#timeZone;
  }
  get iso(): string {
    return this.#at.toISOString();
  }

  override valueOf(): string {
    return this.full;
  }

  /** `{{ expiresAt | json }}` shows the parts, not an empty object. */
  toJSON(): Record<string, string> {
    return { full: this.full, date: this.date, time: this.time, weekday: this.weekday, zone: this.zone, timeZone: this.timeZone, iso: this.iso };
  }
}

const STYLE_OPTIONS: Record<Exclude<LocalTimeStyle, 'iso'>, Intl.DateTimeFormatOptions> = {
  full: { dateStyle: 'full', timeStyle: 'short' },
  date: { dateStyle: 'long' },
  time: { timeStyle: 'short' },
  weekday: { weekday: 'long' },
  zone: { timeZoneName: 'long' },
};

// Building an Intl.DateTimeFormat costs far more than formatting with one
// (milliseconds against microseconds), and a fleet sees few locale/zone pairs.
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 1000;

function formatter(locale: string, timeZone: string, style: Exclude<LocalTimeStyle, 'iso'>): Intl.DateTimeFormat {
  const key = `${locale}|${timeZone}|${style}`;
  let f = formatters.get(key);
  if (!f) {
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    f = new Intl.DateTimeFormat(locale, { timeZone, ...STYLE_OPTIONS[style] });
    formatters.set(key, f);
  }
  return f;
}

export function formatLocalTime(at: Date, locale: string, timeZone: string, style: LocalTimeStyle): string {
  if (style === 'iso') return at.toISOString();
  if (style === 'zone') {
    return formatter(locale, timeZone, 'zone').formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;
  }
  return formatter(locale, timeZone, style).format(at);
}

export const LOCAL_TIME_STYLES: readonly LocalTimeStyle[] = ['full', 'date', 'time', 'weekday', 'zone', 'iso'];
