import { liquidjs } from './liquid.js';
import { remember } from '../remember.js';

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
export interface LocalTime {
  readonly full: string;
  readonly date: string;
  readonly time: string;
  readonly weekday: string;
  readonly zone: string;
  readonly timeZone: string;
  readonly iso: string;
  toJSON(): Record<string, string>;
}

/** A LocalTime for a template's scope (a LiquidJS Drop, so `{{ expiresAt }}` prints `full`). */
export function localTime(at: Date, locale: string, timeZone: string): LocalTime {
  localTimeClass ??= defineLocalTime();
  return new localTimeClass(at, locale, timeZone);
}

let localTimeClass: (new (at: Date, locale: string, timeZone: string) => LocalTime) | undefined;

// Defined on first use: the class extends LiquidJS's Drop, and LiquidJS is loaded only when templates are.
function defineLocalTime() {
  return class LocalTime extends liquidjs().Drop {
    readonly #at: Date;
    readonly #locale: string;
    readonly #timeZone: string;

    constructor(at: Date, locale: string, timeZone: string) {
      super();
      this.#at = at;
      this.#locale = locale;
      this.#timeZone = timeZone;
    }

    #format(style: LocalTimeStyle): string {
      return formatLocalTime(this.#at, this.#locale, this.#timeZone, style);
    }

    get full(): string {
      return this.#format('full');
    }
    get date(): string {
      return this.#format('date');
    }
    get time(): string {
      return this.#format('time');
    }
    get weekday(): string {
      return this.#format('weekday');
    }
    get zone(): string {
      return this.#format('zone');
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
  };
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

function formatter(locale: string, timeZone: string, style: Exclude<LocalTimeStyle, 'iso'>): Intl.DateTimeFormat {
  return remember(formatters, `${locale}|${timeZone}|${style}`, () => new Intl.DateTimeFormat(locale, { timeZone, ...STYLE_OPTIONS[style] }));
}

// Every style but iso shows at most minutes (no CLDR short time has
// seconds, and zones change offset on the minute), so one formatting serves
// every moment of that minute in that locale and zone: the holds that
// expire together share it. Texts are kept by locale and zone, then by
// style and minute, so a hit builds no key string.
interface ZoneTexts {
  locale: string;
  timeZone: string;
  byStyle: Map<LocalTimeStyle, Map<number, string>>;
}
const zoneTexts = new Map<string, ZoneTexts>();
// The parts of a message, and mostly the messages of a batch, share one locale and zone.
let lastZone: ZoneTexts | undefined;
let formattedCount = 0;
const MAX_FORMATTED = 10_000;

function minutesOf(locale: string, timeZone: string, style: LocalTimeStyle): Map<number, string> {
  let zone = lastZone;
  if (zone === undefined || zone.locale !== locale || zone.timeZone !== timeZone) {
    const key = `${locale}|${timeZone}`;
    zone = zoneTexts.get(key);
    if (!zone) zoneTexts.set(key, (zone = { locale, timeZone, byStyle: new Map() }));
    lastZone = zone;
  }
  let minutes = zone.byStyle.get(style);
  if (!minutes) zone.byStyle.set(style, (minutes = new Map()));
  return minutes;
}

export function formatLocalTime(at: Date, locale: string, timeZone: string, style: LocalTimeStyle): string {
  if (style === 'iso') return at.toISOString();
  const minute = Math.floor(at.getTime() / 60_000);
  let minutes = minutesOf(locale, timeZone, style);
  let text = minutes.get(minute);
  if (text === undefined) {
    text =
      style === 'zone'
        ? (formatter(locale, timeZone, 'zone').formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone)
        : formatter(locale, timeZone, style).format(at);
    if (formattedCount >= MAX_FORMATTED) {
      zoneTexts.clear();
      lastZone = undefined;
      formattedCount = 0;
      minutes = minutesOf(locale, timeZone, style);
    }
    minutes.set(minute, text);
    formattedCount++;
  }
  return text;
}

export const LOCAL_TIME_STYLES: readonly LocalTimeStyle[] = ['full', 'date', 'time', 'weekday', 'zone', 'iso'];
