import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCli, runCliInProcess } from '../helpers/cli.js';
import { templateFiles, writeTemplateDir } from '../helpers/templates.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('tpl_cli');
});
afterAll(async () => {
  for (const dir of [brokenDir, typoDir]) rmSync(dir, { recursive: true, force: true });
  await db.close();
});

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { ...db.env, ...env });

// Three problems: a meta.json header leasehold sets itself, an unknown filter, a syntax error.
const brokenDir = writeTemplateDir(
  templateFiles({ text: '{{ holdId | shout }}', html: '{% if %}', meta: { headers: { Bcc: 'archive@example.com' } } }),
);
// Parses, but fails when rendered: a misspelt variable.
const typoDir = writeTemplateDir(templateFiles({ subject: 'Hello {{ custmer }}' }));

describe('leasehold templates check', () => {
  it('passes the shipped templates and lists their locales', async () => {
    const res = await cli(['templates', 'check']);
    expect(res.code, res.stderr).toBe(0);
    for (const kind of ['reservation-expired', 'reservation-reminder', 'reservation-confirmed']) {
      expect(res.stdout).toMatch(new RegExp(`${kind}: de \\(version [0-9a-f]{16}\\), en \\(version [0-9a-f]{16}\\)`));
    }
    expect(res.stdout.trim().split('\n').at(-1)).toBe('templates ok');
  });

  it('lists every problem with its file and exits 2', async () => {
    const res = await cli(['templates', 'check'], { LEASEHOLD_TEMPLATES_DIR: brokenDir });
    expect(res.code).toBe(2);
    expect(res.stdout).toContain('problem: reservation-expired/meta.json: headers.Bcc: is set by leasehold itself');
    expect(res.stdout).toContain('problem: reservation-expired/en/text.liquid: undefined filter: shout');
    expect(res.stdout).toContain('problem: reservation-expired/en/html.liquid: invalid value expression');
    expect(res.stderr.trim()).toBe(`leasehold: 3 template problem(s) in ${brokenDir}`);

    const typo = await cli(['templates', 'check'], { LEASEHOLD_TEMPLATES_DIR: typoDir });
    expect(typo.code).toBe(2);
    expect(typo.stdout).toContain('problem: reservation-expired/en/subject.liquid: undefined variable: custmer, line:1, col:10');
  });
});

describe('broken templates at start-up', () => {
  it.each([
    ['delivery-worker', brokenDir, /^leasehold: templates in .+ are broken: reservation-expired\/meta\.json: headers\.Bcc: .+ \(and 2 more\); run `leasehold templates check`$/],
    ['start', typoDir, /^leasehold: templates in .+ are broken: reservation-expired\/en\/subject\.liquid: undefined variable: custmer, line:1, col:10; run `leasehold templates check`$/],
  ])('%s refuses to start with one clear line and exit 2', async (command, dir, line) => {
    const res = await cli([command], { LEASEHOLD_TEMPLATES_DIR: dir, PORT: '0' });
    expect(res.code).toBe(2);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr.trim()).toMatch(line);
    expect(res.stdout).not.toContain('running');
  });

  it('a directory that does not exist refuses the start the same way', async () => {
    const res = await cli(['delivery-worker'], { LEASEHOLD_TEMPLATES_DIR: '/nonexistent/templates' });
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toMatch(/^leasehold: templates in \/nonexistent\/templates are broken: \/nonexistent\/templates: does not exist/);
  });
});

describe('leasehold templates preview', () => {
  it('--sample prints subject and text in the chosen locale and writes the HTML', async () => {
    const out = path.join(os.tmpdir(), `leasehold-preview-test-${process.pid}.html`);
    const res = await cli(['templates', 'preview', 'reservation-expired', '--sample', '--locale', 'de-DE', '--time-zone', 'Europe/Berlin', '--out', out]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^template reservation-expired\/de \(version [0-9a-f]{16}\), locale de-DE, time zone Europe\/Berlin$/m);
    expect(res.stdout).toMatch(/^Subject: Ihre Reservierung für Dienstag, 3\. März 2026 um 10:00 ist abgelaufen$/m);
    expect(res.stdout).toContain('Hallo Ana,');
    expect(res.stdout).toContain(`HTML written to ${out}`);
    expect(readFileSync(out, 'utf8')).toMatch(/^<!doctype html>\n<html lang="de-DE">/);
  });

  it("--hold renders with the hold's own metadata, escaping only the HTML, and never prints the address", async () => {
    await createHold(
      db.pool,
      { id: 'preview-1', customerEmail: 'preview.person@example.com', ttlSeconds: 600, metadata: { name: '<b>Ana</b>', timeZone: 'Asia/Tokyo' } },
      { schema: db.schema },
    );
    const out = path.join(os.tmpdir(), `leasehold-preview-hold-${process.pid}.html`);
    const res = await cli(['templates', 'preview', 'reservation-expired', '--hold', 'preview-1', '--out', out]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('note: the hold is held; this is the email it would get if it expired');
    expect(res.stdout).toMatch(/locale en, time zone Asia\/Tokyo/);
    expect(res.stdout).toContain('Hello <b>Ana</b>,');
    expect(readFileSync(out, 'utf8')).toContain('Hello &lt;b&gt;Ana&lt;/b&gt;,');
    expect(res.stdout + res.stderr).not.toContain('preview.person');
  });

  // In this process (src/): the reminder's words are computed by code a child process (dist/) may predate.
  it('previews the reminder and the confirmation with their sample moments, in English and German', async () => {
    const out = path.join(os.tmpdir(), `leasehold-preview-reminder-${process.pid}.html`);
    const en = await runCliInProcess(['templates', 'preview', 'reservation-reminder', '--sample', '--out', out], db.env);
    expect(en.code, en.stderr).toBe(0);
    expect(en.stdout).toMatch(/^template reservation-reminder\/en \(version [0-9a-f]{16}\), locale en, time zone UTC$/m);
    expect(en.stdout).toMatch(/^Subject: Your reservation for Tuesday, March 3, 2026 at 9:00\sAM expires in 5 minutes$/m);
    expect(en.stdout).toContain('https://example.com/confirm');
    expect(readFileSync(out, 'utf8')).toContain('<strong>in 5 minutes</strong>');

    const de = await runCliInProcess(['templates', 'preview', 'reservation-reminder', '--locale', 'de', '--time-zone', 'Europe/Berlin', '--out', out], db.env);
    expect(de.code, de.stderr).toBe(0);
    expect(de.stdout).toMatch(/^Subject: Ihre Reservierung für Dienstag, 3\. März 2026 um 10:00 läuft in 5 Minuten ab$/m);

    const confirmed = await runCliInProcess(['templates', 'preview', 'reservation-confirmed', '--sample', '--out', out], db.env);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toMatch(/^Subject: Your reservation for Tuesday, March 3, 2026 at 9:00\sAM is confirmed$/m);
    expect(confirmed.stdout).toContain('We received your confirmation at 8:32');
    rmSync(out, { force: true });
  });

  it("--hold previews a held hold's reminder counting from now, and says a held hold is not confirmed", async () => {
    await createHold(db.pool, { id: 'preview-2', customerEmail: 'p2@example.com', ttlSeconds: 600, metadata: { name: 'Bo' } }, { schema: db.schema });
    const out = path.join(os.tmpdir(), `leasehold-preview-hold2-${process.pid}.html`);
    const reminder = await runCliInProcess(['templates', 'preview', 'reservation-reminder', '--hold', 'preview-2', '--out', out], db.env);
    expect(reminder.code, reminder.stderr).toBe(0);
    expect(reminder.stdout).not.toContain('note:');
    expect(reminder.stdout).toMatch(/^Subject: Your reservation expires in (9|10) minutes$/m);

    const confirmed = await runCliInProcess(['templates', 'preview', 'reservation-confirmed', '--hold', 'preview-2', '--out', out], db.env);
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain('note: the hold is held; this is the email it would get if it were confirmed');
    expect(confirmed.stdout).toContain('Your reservation is confirmed.');
    expect(confirmed.stdout).not.toContain('We received your confirmation');
    rmSync(out, { force: true });
  });

  it('usage errors exit 2: an unknown kind, --hold with --sample, a bad locale', async () => {
    for (const args of [
      ['templates', 'preview', 'welcome'],
      ['templates', 'preview', 'reservation-expired', '--hold', 'x', '--sample'],
      ['templates', 'preview', 'reservation-expired', '--locale', 'not a locale'],
      ['templates', 'preview'],
    ]) {
      const res = await cli(args);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.split('\n')[0]).toMatch(/no templates for "welcome"|cannot be used with|--locale|missing required argument/);
    }
    expect(existsSync(path.join(os.tmpdir(), 'leasehold-preview-welcome-en.html'))).toBe(false);
  });
});

describe('the trace shows the subject that was sent', () => {
  it('after delivery, `trace` prints the stored subject and its template', async () => {
    await rateLimiterSet(db.pool, db.schema, { perSecond: 1000, burst: 1000 });
    const s = ident(db.schema);
    await createHold(db.pool, { id: 'traced-1', customerEmail: 'traced@example.com', ttlSeconds: 600, metadata: { slot: 'Tue 10:00' } }, { schema: db.schema });
    await db.pool.query(`UPDATE ${s}.support_reservations SET expires_at = now() - interval '1 second' WHERE id = 'traced-1'`);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();
    await new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: new SandboxGateway() }).runOnce();
    const res = await cli(['trace', 'traced-1']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^ {2}subject "Your reservation has expired" {2}\(reservation-expired\/en, en, UTC, version [0-9a-f]{16}, rendered \S+\)$/m);
  });
});
