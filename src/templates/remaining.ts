import { remember } from '../remember.js';

/**
 * How long a hold has left, as a reminder says it: "in 5 minutes",
 * "in 2 hours", German "in 5 Minuten". Pure: the render moment is passed in,
 * so a test (and a stored message) never depends on the wall clock.
 */
export interface Remaining {
  /** `Intl.RelativeTimeFormat` in the message's locale, in the largest sensible unit. */
  readonly words: string;
  /** Whole seconds from the render moment to the deadline; 0 once it has passed. */
  readonly seconds: number;
}

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * The unit and count a duration is said in: seconds under a minute, minutes
 * under 90 minutes, hours under 48 hours, else days, each rounded. The
 * duration is rounded to whole seconds first, so 59.7 s reads "in 1 minute",
 * never "in 60 seconds".
 */
export function remainingUnit(seconds: number): { value: number; unit: Intl.RelativeTimeFormatUnit } {
  if (seconds < MINUTE) return { value: seconds, unit: 'second' };
  if (seconds < 90 * MINUTE) return { value: Math.round(seconds / MINUTE), unit: 'minute' };
  if (seconds < 48 * HOUR) return { value: Math.round(seconds / HOUR), unit: 'hour' };
  return { value: Math.round(seconds / DAY), unit: 'day' };
}

// Building an Intl.RelativeTimeFormat costs far more than formatting with
// one, and a fleet sees few locales.
const formatters = new Map<string, Intl.RelativeTimeFormat>();

function formatter(locale: string): Intl.RelativeTimeFormat {
  return remember(formatters, locale, () => new Intl.RelativeTimeFormat(locale, { numeric: 'auto' }));
}

/**
 * Time left from `now` until `deadline`, in `locale`. A deadline already
 * passed (a render after it, clock skew between machines) counts as none
 * left ("now", "jetzt"): a reminder never says its hold expires "5 minutes ago".
 */
export function remaining(deadline: Date, now: Date, locale: string): Remaining {
  const seconds = Math.max(0, Math.round((deadline.getTime() - now.getTime()) / 1000));
  const { value, unit } = remainingUnit(seconds);
  return { words: formatter(locale).format(value, unit), seconds };
}
