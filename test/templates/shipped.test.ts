import { describe, expect, it } from 'vitest';
import { MESSAGE_KINDS, shippedTemplates } from '../../src/templates/templates.js';
import type { RenderInput } from '../../src/templates/render.js';
import type { RenderedMessage } from '../../src/model/message.js';
import { runCliInProcess } from '../helpers/cli.js';

/**
 * The texts the package ships, as a customer reads them: every kind in
 * every locale, with its sample data and with none of the optional
 * metadata, friendly, in the customer's zone, and without internal ids.
 */
const shipped = shippedTemplates();
const LOCALES = ['en', 'de'] as const;

/** Phrases each kind must say in each locale, with full sample data and with no metadata at all. */
const PHRASES: Record<(typeof MESSAGE_KINDS)[number], Record<(typeof LOCALES)[number], { always: string[]; sample: string[]; bare: string[] }>> = {
  'reservation-expired': {
    en: { always: ['It needed to be confirmed by', 'released it'], sample: ['https://example.com/book', 'you can choose a new time here:'], bare: ['just make a new reservation'] },
    de: {
      always: ['Die Reservierung hätte bis', 'bestätigt werden müssen', 'haben wir sie wieder freigegeben'],
      sample: ['https://example.com/book', 'können Sie hier einen neuen Termin wählen:'],
      bare: ['reservieren Sie einfach erneut'],
    },
  },
  'reservation-reminder': {
    en: { always: ['expires in 5 minutes', 'unless you confirm it'], sample: ['https://example.com/confirm', 'To keep it, confirm it here:'], bare: ['please confirm it before then'] },
    de: {
      always: ['läuft sie in 5 Minuten ab', 'Wenn Sie die Reservierung nicht bestätigen'],
      sample: ['https://example.com/confirm', 'Hier können Sie die Reservierung bestätigen:'],
      bare: ['bestätigen Sie sie bitte bis dahin'],
    },
  },
  'reservation-confirmed': {
    en: { always: ['is confirmed', 'We received your confirmation at'], sample: ['"Callback with our support team" on Tuesday, 3 March 2026 at 10:00'], bare: ['Your reservation is confirmed.'] },
    de: {
      always: ['ist bestätigt', 'bei uns eingegangen'],
      sample: ['Ihre Reservierung für „Callback with our support team“ am Dienstag, 3. März 2026 um 10:00'],
      bare: ['Ihre Reservierung ist bestätigt.'],
    },
  },
};

const SUBJECTS: Record<(typeof MESSAGE_KINDS)[number], Record<(typeof LOCALES)[number], [string, string]>> = {
  'reservation-expired': {
    en: ['Your reservation for Tuesday, 3 March 2026 at 10:00 has expired', 'Your reservation has expired'],
    de: ['Ihre Reservierung für Dienstag, 3. März 2026 um 10:00 ist abgelaufen', 'Ihre Reservierung ist abgelaufen'],
  },
  'reservation-reminder': {
    en: ['Your reservation for Tuesday, 3 March 2026 at 10:00 expires in 5 minutes', 'Your reservation expires in 5 minutes'],
    de: ['Ihre Reservierung für Dienstag, 3. März 2026 um 10:00 läuft in 5 Minuten ab', 'Ihre Reservierung läuft in 5 Minuten ab'],
  },
  'reservation-confirmed': {
    en: ['Your reservation for Tuesday, 3 March 2026 at 10:00 is confirmed', 'Your reservation is confirmed'],
    de: ['Ihre Reservierung für Dienstag, 3. März 2026 um 10:00 ist bestätigt', 'Ihre Reservierung ist bestätigt'],
  },
};

// en-GB, so that English dates read "3 March 2026" whatever Intl's en default; Berlin, so that a time
// left in UTC would show (the sample's 09:00Z slot is 10:00 there).
const customer = { en: { locale: 'en-GB', timeZone: 'Europe/Berlin' }, de: { locale: 'de-DE', timeZone: 'Europe/Berlin' } };

function render(kind: string, locale: (typeof LOCALES)[number], withSample: boolean): { input: RenderInput; message: RenderedMessage } {
  const input = shipped.sampleInput(kind);
  input.metadata = { ...(withSample ? input.metadata : {}), ...customer[locale] };
  return { input, message: shipped.render(kind, input) };
}

function expectNoInternals(input: RenderInput, message: RenderedMessage): void {
  for (const body of [message.subject, message.text, message.html]) {
    expect(body).not.toContain(input.holdId);
    expect(body).not.toContain(input.intentId);
    expect(body).not.toMatch(/reservation-(expired|reminder|confirmed)/);
    // No raw timestamps: every time is formatted in the customer's zone.
    expect(body).not.toMatch(/\bUTC\b|\d{4}-\d\d-\d\dT|\d\d:\d\d:\d\d/);
    // Nothing a template forgot to fill in.
    expect(body).not.toMatch(/\{\{|\{%|\[object Object\]|undefined|null/);
  }
}

describe('the shipped templates', () => {
  it('have every kind in every shipped locale', () => {
    expect(shipped.list().map((k) => [k.kind, k.locales.map((l) => l.locale)])).toEqual(
      [...MESSAGE_KINDS].sort().map((kind) => [kind, [...LOCALES].sort()]),
    );
  });

  describe.each(MESSAGE_KINDS.flatMap((kind) => LOCALES.map((locale) => [kind, locale] as const)))('%s in %s', (kind, locale) => {
    it.each([
      ['its sample data', true],
      ['no metadata (no name, slot, slotAt, URL)', false],
    ])('with %s: the known phrases, the subject, and no internal ids', (_what, withSample) => {
      const { input, message } = render(kind, locale, withSample);
      expect(message).toMatchObject({ template: kind, templateLocale: locale, locale: customer[locale].locale, timeZone: 'Europe/Berlin' });
      expect(message.subject).toBe(SUBJECTS[kind][locale][withSample ? 0 : 1]);
      const phrases = PHRASES[kind][locale];
      for (const phrase of [...phrases.always, ...(withSample ? phrases.sample : phrases.bare)]) expect(message.text).toContain(phrase);
      for (const phrase of withSample ? phrases.bare : phrases.sample) expect(message.text).not.toContain(phrase);
      // The HTML part says the same (some of it in bold).
      for (const phrase of phrases.always) expect(message.html.replace(/<\/?strong>/g, '')).toContain(phrase);
      expect(message.text).toMatch(withSample ? /^(Hello|Hallo) Ana,\n\n/ : /^(Hello|Guten Tag),\n\n/);
      expect(message.html).toMatch(new RegExp(`^<!doctype html>\\n<html lang="${customer[locale].locale}">`));
      expectNoInternals(input, message);
    });
  });

  it('the HTML says what the text says, with the call to action as a button', () => {
    const { message } = render('reservation-reminder', 'de', true);
    expect(message.html).toContain('<strong>in 5 Minuten</strong> ab, um 09:40 Uhr am 2. März 2026 (Mitteleuropäische Normalzeit)');
    expect(message.html).toContain('<a href="https://example.com/confirm" style="');
    expect(message.html).toContain('>Reservierung bestätigen</a>');
    expect(render('reservation-reminder', 'en', false).message.html).not.toContain('<a href');
  });

  it('the German expiry email is grammatical whichever of slot and slotAt the hold has', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ slot: 'Rückruf', slotAt: '2026-03-03T09:00:00Z' }, 'wir hatten „Rückruf“ am Dienstag, 3. März 2026 um 10:00 (Mitteleuropäische Normalzeit) für Sie reserviert. Die Reservierung hätte'],
      [{ slotAt: '2026-03-03T09:00:00Z' }, 'wir hatten einen Termin am Dienstag, 3. März 2026 um 10:00 (Mitteleuropäische Normalzeit) für Sie reserviert. Die Reservierung hätte'],
      [{ slot: 'Rückruf' }, 'wir hatten „Rückruf“ für Sie reserviert. Die Reservierung hätte'],
      [{}, 'wir hatten eine Reservierung für Sie vorgemerkt. Die Reservierung hätte'],
    ];
    for (const [metadata, sentence] of cases) {
      const message = shipped.render('reservation-expired', { ...shipped.sampleInput('reservation-expired'), metadata: { ...metadata, ...customer.de } });
      expect(message.text).toContain(sentence);
      expect(message.text).toContain('bestätigt werden müssen. Da wir bis dahin nichts von Ihnen gehört haben, haben wir sie wieder freigegeben.');
      expect(message.text + message.html).not.toContain('Sie hätte');
      // The HTML says the same, with the slot in bold.
      expect(message.html.replace(/<\/?strong>/g, '').replace(/„|“/g, '')).toContain(sentence.replace(/„|“/g, ''));
    }
  });

  it('the reminder counts from the render moment in the words of the locale', () => {
    const base = shipped.sampleInput('reservation-reminder');
    const at = (secondsLeft: number, locale: string) =>
      shipped.render('reservation-reminder', { ...base, now: new Date(base.expiresAt.getTime() - secondsLeft * 1000), metadata: { locale } }).subject;
    expect(at(2 * 3600, 'en')).toBe('Your reservation expires in 2 hours');
    expect(at(3 * 86400, 'de')).toBe('Ihre Reservierung läuft in 3 Tagen ab');
    expect(at(-30, 'de')).toBe('Ihre Reservierung läuft jetzt ab');
  });

  it('the confirmation leaves out when it was confirmed if the hold has no confirmation time', () => {
    const input = { ...shipped.sampleInput('reservation-confirmed'), confirmedAt: null, metadata: customer.en };
    const message = shipped.render('reservation-confirmed', input);
    expect(message.text).toMatch(/^Hello,\n\nYour reservation is confirmed\.\n\nThank you for confirming\./);
    expect(message.html).not.toContain('We received');
  });

  it('`templates check` passes on the shipped directory and lists every kind', async () => {
    const res = await runCliInProcess(['templates', 'check'], { DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused' });
    expect(res.code, res.stderr).toBe(0);
    for (const kind of MESSAGE_KINDS) expect(res.stdout).toMatch(new RegExp(`^  ${kind}: de \\(version [0-9a-f]{16}\\), en \\(version [0-9a-f]{16}\\)$`, 'm'));
    expect(res.stdout.trim().split('\n').at(-1)).toBe('templates ok');
    expect(shipped.check()).toEqual([]);
  });
});
