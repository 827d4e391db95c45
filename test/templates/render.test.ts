import { describe, expect, it } from 'vitest';
import { readTemplateDirectory } from '../../src/templates/source.js';
import { loadTemplates, shippedTemplates, type Templates } from '../../src/templates/templates.js';
import { TemplateRenderError } from '../../src/templates/render.js';
import { input, templateFiles } from '../helpers/templates.js';

const KIND = 'reservation-expired';

function renderError(templates: Templates, metadata: Record<string, unknown> = {}): TemplateRenderError {
  try {
    templates.render(KIND, input(metadata));
  } catch (error) {
    expect(error).toBeInstanceOf(TemplateRenderError);
    return error as TemplateRenderError;
  }
  throw new Error('expected the render to fail');
}

const times = templateFiles({
  subject: '{{ expiresAt }}',
  text: '{{ expiresAt.date }}|{{ expiresAt.time }}|{{ expiresAt.weekday }}|{{ expiresAt.zone }}|{{ expiresAt.timeZone }}|{{ expiresAt.iso }}|{{ locale }}',
  html: '{{ expiredAt.time }}',
});

describe('times in the customer locale and time zone', () => {
  it("formats expiresAt with Intl in the hold's locale and zone", () => {
    const de = loadTemplates({ files: { ...times, ...templateFiles({ locale: 'de', subject: '{{ expiresAt }}', text: times['reservation-expired/en/text.liquid'] }) } });
    const m = de.render(KIND, input({ locale: 'de-CH', timeZone: 'Europe/Zurich' }));
    expect(m.subject).toBe('Dienstag, 3. März 2026 um 10:40');
    expect(m.text).toBe('3. März 2026|10:40|Dienstag|Mitteleuropäische Normalzeit|Europe/Zurich|2026-03-03T09:40:00.000Z|de-CH\n');
    expect(m).toMatchObject({ locale: 'de-CH', templateLocale: 'de', timeZone: 'Europe/Zurich' });

    const ny = loadTemplates({ files: times }).render(KIND, input({ locale: 'en-US', timeZone: 'America/New_York' }));
    expect(ny.text).toMatch(/^March 3, 2026\|4:40\sAM\|Tuesday\|Eastern Standard Time\|America\/New_York\|/);
    expect(ny.html).toMatch(/^4:40\sAM\n$/);
  });

  it('uses the configured defaults when the hold names no locale or zone, or ones Intl cannot use', () => {
    const templates = loadTemplates({ files: times, defaultLocale: 'en-GB', defaultTimeZone: 'Europe/London' });
    for (const metadata of [{}, { locale: 'not a locale', timeZone: 'Mars/Olympus_Mons' }, { locale: 42, timeZone: ['UTC'] }]) {
      const m = templates.render(KIND, input(metadata));
      expect(m).toMatchObject({ locale: 'en-GB', timeZone: 'Europe/London', templateLocale: 'en' });
      expect(m.subject).toMatch(/^Tuesday,? 3 March 2026 at 09:40$/);
    }
    expect(loadTemplates({ files: times }).render(KIND, input()).timeZone).toBe('UTC');
  });

  it("falls back to the default locale's template, formatting in the default locale, when the hold's language has none", () => {
    const templates = loadTemplates({ files: times, defaultLocale: 'en-GB' });
    const m = templates.render(KIND, input({ locale: 'fr-FR', timeZone: 'Europe/Paris' }));
    expect(m).toMatchObject({ templateLocale: 'en', locale: 'en-GB', timeZone: 'Europe/Paris' });
    expect(m.subject).toMatch(/^Tuesday,? 3 March 2026 at 10:40$/);
  });

  it('local_time formats a timestamp from the metadata in the same locale and zone', () => {
    const templates = loadTemplates({
      files: templateFiles({
        subject: "{{ metadata.slotAt | local_time }} / {{ metadata.slotAt | local_time: 'time' }}",
        meta: { sample: { metadata: { slotAt: '2026-01-01T12:00:00+01:00' } } },
      }),
    });
    const m = templates.render(KIND, input({ slotAt: '2026-03-03T09:00:00Z', locale: 'en-GB', timeZone: 'Asia/Tokyo' }));
    expect(m.subject).toMatch(/^Tuesday,? 3 March 2026 at 18:00 \/ 18:00$/);
    // A time without a zone would be read in the host's zone: refused, for this message only.
    const error = renderError(templates, { slotAt: '2026-03-03 09:00' });
    expect(error.broken).toBe(false);
    expect(error.message).toContain('local_time');
    expect(error.message).not.toContain('2026-03-03 09:00');
  });
});

describe('escaping', () => {
  it('escapes output in the HTML part only; | raw opts out', () => {
    const templates = loadTemplates({
      files: templateFiles({
        subject: 'For {{ metadata.name }}',
        text: 'Hello {{ metadata.name }}',
        html: '<p>Hello {{ metadata.name }}</p><a href="{{ metadata.url }}">x</a>{{ metadata.trusted | raw }}',
      }),
    });
    const m = templates.render(KIND, input({ name: `<script>alert("x")</script> & 'co'`, url: 'https://x.test/?a=1&b="2"', trusted: '<hr>' }));
    expect(m.subject).toBe(`For <script>alert("x")</script> & 'co'`);
    expect(m.text).toBe(`Hello <script>alert("x")</script> & 'co'\n`);
    expect(m.html).toBe(
      '<p>Hello &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;co&#39;</p><a href="https://x.test/?a=1&amp;b=&#34;2&#34;">x</a><hr>\n',
    );
  });
});

describe('a sandbox for operator templates', () => {
  it('an unknown filter or a syntax error is found when loading, with the file', () => {
    const templates = loadTemplates({ files: templateFiles({ text: '{{ holdId | shout }}', html: '{% if %}' }) });
    const problems = templates.check();
    expect(problems).toEqual(
      expect.arrayContaining([
        { file: 'reservation-expired/en/text.liquid', message: expect.stringContaining('undefined filter: shout') },
        { file: 'reservation-expired/en/html.liquid', message: expect.stringContaining('invalid value expression') },
      ]),
    );
    const error = renderError(templates);
    expect(error.broken).toBe(true);
  });

  it('a missing variable is an error: for this message only when the sample data renders, for every message when it does not', () => {
    const needsSlot = loadTemplates({ files: templateFiles({ text: 'Your slot: {{ metadata.slot }}', meta: { sample: { metadata: { slot: 'Tue 10:00' } } } }) });
    expect(needsSlot.check()).toEqual([]);
    const lacking = renderError(needsSlot, { name: 'Ana' });
    expect(lacking.broken).toBe(false);
    expect(lacking.message).toBe('template reservation-expired/en/text.liquid: undefined variable: metadata.slot, line:1, col:15');

    const typo = loadTemplates({ files: templateFiles({ subject: 'Hi {{ nmae }}' }) });
    expect(typo.check()).toEqual([{ file: 'reservation-expired/en/subject.liquid', message: expect.stringContaining('undefined variable: nmae') }]);
    expect(renderError(typo).broken).toBe(true);
  });

  it('optional metadata can be guarded with if and default', () => {
    const templates = loadTemplates({
      files: templateFiles({ text: "{% if metadata.name %}Hi {{ metadata.name }}{% else %}Hello{% endif %}, {{ metadata.slot | default: 'your slot' }}" }),
    });
    expect(templates.render(KIND, input()).text).toBe('Hello, your slot\n');
    expect(templates.render(KIND, input({ name: 'Ana', slot: 'Tue' })).text).toBe('Hi Ana, Tue\n');
  });

  it('every guard reads a missing key, nested or in a partial, as nil; outside a guard the error names the first missing step', () => {
    const guards =
      '{% if metadata.a.b %}1{% elsif metadata.x and metadata.name %}2{% endif %}{% unless metadata.x %}3{% endunless %}' +
      '{% case metadata.x %}{% when nil %}4{% endcase %}{% assign y = metadata.x %}{% if y == nil %}5{% endif %}{{ metadata.x.y | default: 6 }}';
    const templates = loadTemplates({
      files: templateFiles({ text: `${guards}{% render 'p' %}`, html: '{{ metadata.a.b }}' }, { 'partials/p.liquid': `|${guards}` }),
    });
    const error = renderError(templates);
    expect(error.message).toBe('template reservation-expired/en/html.liquid: undefined variable: metadata.a, line:1, col:4');
    const both = loadTemplates({ files: templateFiles({ text: `${guards}{% render 'p' %}` }, { 'partials/p.liquid': `|${guards}` }) });
    expect(both.render(KIND, input()).text).toBe('3456|3456\n');
    expect(both.render(KIND, input({ a: { b: true } })).text).toBe('13456|13456\n');
  });

  it('no prototype and no JavaScript: constructor and __proto__ are undefined variables', () => {
    for (const text of ['{{ metadata.constructor }}', '{{ holdId.constructor.name }}', '{{ metadata.__proto__ }}']) {
      const templates = loadTemplates({ files: templateFiles({ text }) });
      expect(renderError(templates).message).toContain('undefined variable');
    }
    // Times are objects with methods; a method is called, never handed out, so no Function is reachable.
    const viaTime = loadTemplates({ files: templateFiles({ text: '{{ expiresAt.constructor.constructor }}' }) });
    expect(renderError(viaTime).message).toMatch(/cannot be invoked without 'new'/);
    const json = loadTemplates({ files: templateFiles({ text: '{{ expiresAt | json }}' }) });
    expect(JSON.parse(json.render(KIND, input()).text)).toMatchObject({ iso: '2026-03-03T09:40:00.000Z', timeZone: 'UTC' });
  });

  it('includes resolve only inside the template set, never on the file system', () => {
    const ok = loadTemplates({ files: templateFiles({ text: "{% render 'footer', name: 'Ana' %}" }, { 'partials/footer.liquid': '-- {{ name }}' }) });
    expect(ok.check()).toEqual([]);
    expect(ok.render(KIND, input()).text).toBe('-- Ana\n');
    for (const target of ['/etc/passwd', '../../../../etc/passwd', '../en/subject', 'reservation-expired/en/subject']) {
      const templates = loadTemplates({ files: templateFiles({ text: `{% include '${target}' %}` }) });
      const problems = templates.check();
      expect(problems).toHaveLength(1);
      expect(problems[0]!.message).toMatch(/Failed to lookup/);
    }
  });

  it.each([
    ['a huge range', '{% for i in (1..100000000) %}{{ i }}{% endfor %}', /memory alloc limit exceeded/],
    ['nested loops', '{% for i in (1..400) %}{% for j in (1..400) %}.{% endfor %}{% endfor %}', /memory alloc limit exceeded/],
    ['a partial including itself', "{% include 'loop' %}", /Maximum call stack|limit exceeded/],
  ])('%s fails the render by a deterministic limit instead of holding the worker', (_name, text, pattern) => {
    const templates = loadTemplates({ files: templateFiles({ text }, { 'partials/loop.liquid': "x{% include 'loop' %}" }) });
    const error = renderError(templates);
    expect(error.message).toMatch(pattern);
    expect(error.broken).toBe(true);
  });
});

describe('meta.json: From, Reply-To and headers per template', () => {
  it('the locale meta overrides the kind meta; the sender defaults to EMAIL_FROM', () => {
    const templates = loadTemplates({
      files: templateFiles({
        meta: { replyTo: 'help@example.com', headers: { 'X-Campaign': 'expiry', 'List-Id': 'holds' } },
        localeMeta: { from: 'Ana at Support <ana@example.com>', headers: { 'X-Campaign': 'expiry-en' } },
      }),
    });
    const m = templates.render(KIND, input());
    expect(m).toMatchObject({
      from: 'Ana at Support <ana@example.com>',
      replyTo: 'help@example.com',
      headers: { 'X-Campaign': 'expiry-en', 'List-Id': 'holds', 'X-Leasehold-Intent-Id': 'reservation-expired:hold-7f3a' },
    });
    expect(loadTemplates({ files: templateFiles() }).render(KIND, input())).toMatchObject({ from: 'Support <support@example.com>', replyTo: null });
  });

  it.each([
    [{ from: 'not an address' }, 'from'],
    [{ replyTo: 'a@b.c\r\nBcc: victim@example.com' }, 'replyTo'],
    [{ headers: { Bcc: 'x@example.com' } }, 'set by leasehold'],
    [{ headers: { 'X-Leasehold-Intent-Id': 'spoof' } }, 'set by leasehold'],
    [{ headers: { 'X-Ok': 'one\r\nBcc: x@example.com' } }, 'one line'],
    [{ headers: { 'bad name': 'x' } }, 'header names'],
    [{ colour: 'blue' }, 'colour: unknown field'],
  ])('%j is refused with the file named', (meta, fragment) => {
    const problems = loadTemplates({ files: templateFiles({ meta }) }).check();
    expect(problems).toHaveLength(1);
    expect(problems[0]!.file).toBe('reservation-expired/meta.json');
    expect(problems[0]!.message).toContain(fragment);
  });

  it('meta.json that is not JSON is a problem, not a crash', () => {
    const problems = loadTemplates({ files: { ...templateFiles(), 'reservation-expired/meta.json': '{ from: ' } }).check();
    expect(problems[0]).toMatchObject({ file: 'reservation-expired/meta.json', message: expect.stringContaining('not valid JSON') });
  });
});

describe('the template set', () => {
  it('needs every message kind, all three parts, and a template for the default locale', () => {
    expect(loadTemplates({ files: {} }).check()).toEqual(
      ['reservation-expired', 'reservation-reminder', 'reservation-confirmed'].map((file) => ({ file, message: expect.stringContaining('is missing') })),
    );
    const { 'reservation-expired/en/html.liquid': _html, ...noHtml } = templateFiles();
    expect(loadTemplates({ files: noHtml }).check()).toEqual([{ file: 'reservation-expired/en/html.liquid', message: expect.stringContaining('is missing') }]);
    expect(loadTemplates({ files: templateFiles({ locale: 'de' }) }).check()).toEqual(
      ['reservation-confirmed', 'reservation-expired', 'reservation-reminder'].map((file) => ({ file, message: 'has no template for the default locale en (LEASEHOLD_DEFAULT_LOCALE)' })),
    );
    expect(loadTemplates({ files: templateFiles({ locale: 'de' }), defaultLocale: 'de-AT' }).check()).toEqual([]);
  });

  it('a directory that does not exist is one problem', () => {
    expect(readTemplateDirectory('/nonexistent/leasehold-templates').problems).toEqual([
      { file: '/nonexistent/leasehold-templates', message: 'does not exist or cannot be read' },
    ]);
    expect(loadTemplates({ dir: '/nonexistent/leasehold-templates' }).check()[0]!.message).toBe('does not exist or cannot be read');
  });

  it('the version hash follows every file that shapes a message', () => {
    const version = (files: Record<string, string>) => loadTemplates({ files }).render(KIND, input()).templateVersion;
    const base = version(templateFiles());
    expect(version(templateFiles())).toBe(base);
    expect(version(templateFiles({ text: 'Held until {{ expiresAt }}!' }))).not.toBe(base);
    expect(version(templateFiles({ meta: { replyTo: 'help@example.com' } }))).not.toBe(base);
    expect(version(templateFiles({}, { 'partials/footer.liquid': 'x' }))).not.toBe(base);
  });
});

describe('the shipped templates', () => {
  const shipped = shippedTemplates();

  it('check clean, in English and German', () => {
    expect(shipped.check()).toEqual([]);
    const locales = [expect.objectContaining({ locale: 'de' }), expect.objectContaining({ locale: 'en' })];
    expect(shipped.list()).toEqual(['reservation-confirmed', KIND, 'reservation-reminder'].map((kind) => ({ kind, locales })));
  });

  it('are friendly, show the slot time in the customer zone, and no internal ids', () => {
    const metadata = { name: 'Ana', slot: 'Callback with support', slotAt: '2026-03-03T14:30:00Z', locale: 'en-US', timeZone: 'America/Chicago' };
    const m = shipped.render(KIND, input(metadata));
    expect(m.subject).toMatch(/^Your reservation for Tuesday, March 3, 2026 at 8:30\sAM has expired$/);
    expect(m.text).toMatch(/^Hello Ana,\n\nWe were holding "Callback with support" for you on Tuesday, March 3, 2026 at 8:30\sAM \(Central Standard Time\)\./);
    expect(m.text).toMatch(/confirmed by 3:40\sAM on March 3, 2026 \(Central Standard Time\)/);
    expect(m.html).toContain('<strong>Callback with support</strong>');
    for (const body of [m.subject, m.text, m.html]) {
      expect(body).not.toContain('hold-7f3a');
      expect(body).not.toContain('reservation-expired:');
      expect(body).not.toMatch(/UTC|Z\b|T\d\d:/);
    }
  });

  it('render without any metadata, and in German for a German-speaking customer', () => {
    expect(shipped.render(KIND, input()).subject).toBe('Your reservation has expired');
    const de = shipped.render(KIND, input({ locale: 'de-AT', timeZone: 'Europe/Vienna', name: 'Jörg' }));
    expect(de).toMatchObject({ subject: 'Ihre Reservierung ist abgelaufen', templateLocale: 'de', locale: 'de-AT' });
    expect(de.text).toMatch(/^Hallo Jörg,\n\nwir hatten eine Reservierung für Sie vorgemerkt\. Die Reservierung hätte bis 10:40 Uhr am 3\. März 2026/);
    expect(de.html).toContain('<html lang="de-AT">');
  });
});
