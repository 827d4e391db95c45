import { remember } from '../remember.js';

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
