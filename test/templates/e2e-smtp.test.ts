import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ident } from '../../src/db/pool.js';
import { createHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { messagesSummary } from '../../src/tables/messages.js';
import { SmtpGateway } from '../../src/providers/smtp.js';
import { loadTemplates } from '../../src/templates/templates.js';
import type { TestDatabase } from '../helpers/database.js';
import { FakeSmtp } from '../helpers/fake-smtp.js';
import { e2eDatabase, outbox } from '../helpers/provider-e2e.js';
import { templateFiles, writeTemplateDir } from '../helpers/templates.js';

let db: TestDatabase;
let smtp: FakeSmtp;
beforeAll(async () => {
  db = await e2eDatabase('tpl_e2e_smtp');
  smtp = new FakeSmtp();
  await smtp.start();
});
afterAll(async () => {
  await smtp.stop();
  await db.close();
});

describe('a templated message end to end through SMTP', () => {
  it('arrives with the rendered subject, text, escaped HTML, the template sender, Reply-To and headers', async () => {
    // From a directory, as LEASEHOLD_TEMPLATES_DIR would give it.
    const dir = writeTemplateDir(
      templateFiles({
        subject: 'Your {{ metadata.slot }} slot has expired',
        text: 'Hello {{ metadata.name }},\n\nwe held it until {{ expiresAt.time }} ({{ expiresAt.timeZone }}).',
        html: '<p>Hello {{ metadata.name }},</p><p>we held it until {{ expiresAt.time }}.</p>',
        meta: {
          from: 'Bookings <bookings@example.com>',
          replyTo: 'Help Desk <help@example.com>',
          headers: { 'X-Campaign': 'expiry' },
          sample: { metadata: { name: 'Ana', slot: 'Tue 10:00' } },
        },
      }),
    );
    const templates = loadTemplates({ dir });
    rmSync(dir, { recursive: true, force: true }); // read once, at load: the files are no longer needed
    expect(templates.check()).toEqual([]);

    const s = ident(db.schema);
    await createHold(
      db.pool,
      { id: 'smtp-1', customerEmail: 'ana@example.net', ttlSeconds: 60, metadata: { name: 'Ana & Bo <3', slot: 'Tue 10:00', locale: 'en-GB', timeZone: 'Asia/Tokyo' } },
      { schema: db.schema },
    );
    await db.pool.query(`UPDATE ${s}.support_reservations SET expires_at = '2026-03-03T09:40:00Z' WHERE id = 'smtp-1'`);
    await new ExpiryWorker({ pool: db.pool, schema: db.schema }).runOnce();

    const worker = new DeliveryWorker({ pool: db.pool, schema: db.schema, gateway: new SmtpGateway({ url: smtp.url }), templates, from: 'Support <support@example.com>' });
    expect((await worker.runOnce()).outcomes).toEqual({ accepted: 1 });
    expect((await outbox(db, ['reservation-expired:smtp-1']))[0]).toMatchObject({ state: 'sent' });

    const mail = smtp.received.find((m) => m.headers['x-leasehold-intent-id'] === 'reservation-expired:smtp-1')!;
    expect(mail.from).toBe('bookings@example.com');
    expect(mail.headers['from']).toBe('Bookings <bookings@example.com>');
    expect(mail.headers['reply-to']).toBe('Help Desk <help@example.com>');
    expect(mail.headers['x-campaign']).toBe('expiry');
    expect(mail.subject).toBe('Your Tue 10:00 slot has expired');
    // 09:40 UTC is 18:40 in Tokyo; the text part is plain, the HTML part escaped.
    expect(mail.text).toContain('Hello Ana & Bo <3,\r\n\r\nwe held it until 18:40 (Asia/Tokyo).');
    expect(mail.text).toContain('<p>Hello Ana &amp; Bo &lt;3,</p><p>we held it until 18:40.</p>');
    expect(await messagesSummary(db.pool, db.schema, 'reservation-expired:smtp-1')).toMatchObject({
      subject: mail.subject,
      from: 'Bookings <bookings@example.com>',
      replyTo: 'Help Desk <help@example.com>',
      locale: 'en-GB',
      timeZone: 'Asia/Tokyo',
    });
  });
});
