import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_errors_sent');
});
afterAll(() => h.close());

const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/;

describe('a refusal names what the caller sent, in the words it sent', () => {
  it('an extension that would not move the hold later names ttlSeconds or expiresAt, with the current expiry in ISO 8601', async () => {
    const created = await h.call('POST', '/v1/holds', { id: 'ext-1', customerEmail: 'a@example.com', ttlSeconds: 3600 });
    const current = created.json().expiresAt as string;

    const bySeconds = await h.call('POST', '/v1/holds/ext-1/extend', { ttlSeconds: 10 });
    expect(bySeconds.statusCode).toBe(400);
    expect(bySeconds.json().error).toEqual({
      code: 'validation_error',
      field: 'ttlSeconds',
      message: `ttlSeconds: must reach past the hold's current expiresAt (${current}): extending only moves a hold later`,
    });

    const earlier = new Date(Date.parse(current) - 60_000).toISOString();
    const byDeadline = await h.call('POST', '/v1/holds/ext-1/extend', { expiresAt: earlier });
    expect(byDeadline.json().error).toEqual({
      code: 'validation_error',
      field: 'expiresAt',
      message: `expiresAt: must be after the hold's current expiresAt (${current})`,
    });
    for (const answer of [bySeconds, byDeadline]) {
      expect(answer.json().error.message).toMatch(ISO);
      expect(answer.json().error.message).not.toMatch(/expires_at|\+00\b/);
    }
  });

  it('a 413 says the limit', async () => {
    const huge = JSON.stringify({ customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { blob: 'x'.repeat(100 * 1024) } });
    const res = await h.call('POST', '/v1/holds', huge);
    expect(res.statusCode).toBe(413);
    expect(res.json().error).toEqual({ code: 'payload_too_large', message: 'the body is larger than the limit (64 KiB)' });
  });

  it('a number too large to be exact says its bound, on every whole-number field of a hold', async () => {
    const create = await h.call('POST', '/v1/holds', '{"customerEmail":"a@example.com","ttlSeconds":1e20}');
    expect(create.json().error).toEqual({ code: 'validation_error', field: 'ttlSeconds', message: 'ttlSeconds: must be at most 2592000 (30 days)' });
    const remind = await h.call('POST', '/v1/holds', '{"customerEmail":"a@example.com","ttlSeconds":60,"remindBeforeSeconds":1e20}');
    expect(remind.json().error).toMatchObject({ field: 'remindBeforeSeconds', message: 'remindBeforeSeconds: must be at most 2592000 (30 days)' });
    await h.call('POST', '/v1/holds', { id: 'ext-2', customerEmail: 'a@example.com', ttlSeconds: 60 });
    const extend = await h.call('POST', '/v1/holds/ext-2/extend', '{"ttlSeconds":1e20}');
    expect(extend.json().error).toMatchObject({ field: 'ttlSeconds', message: 'ttlSeconds: must be at most 2592000 (30 days)' });
    const page = await h.call('GET', '/v1/intents?limit=1e20');
    expect(page.json().error).toMatchObject({ message: expect.stringMatching(/^limit: must be at most \d+$/) });
  });

  it('a reminder longer than the hold is refused, naming remindBeforeSeconds, rather than accepted and never written', async () => {
    const byTtl = await h.call('POST', '/v1/holds', { id: 'rem-1', customerEmail: 'a@example.com', ttlSeconds: 60, remindBeforeSeconds: 300 });
    expect(byTtl.statusCode).toBe(400);
    expect(byTtl.json().error).toEqual({
      code: 'validation_error',
      field: 'remindBeforeSeconds',
      message: 'remindBeforeSeconds: must be less than the hold lasts (ttlSeconds 60): a reminder 300 seconds before expiry could never be sent',
    });
    const equal = await h.call('POST', '/v1/holds', { customerEmail: 'a@example.com', ttlSeconds: 60, remindBeforeSeconds: 60 });
    expect(equal.json().error).toMatchObject({ field: 'remindBeforeSeconds' });
    const byDeadline = await h.call('POST', '/v1/holds', {
      customerEmail: 'a@example.com',
      expiresAt: new Date(Date.now() + 120_000).toISOString(),
      remindBeforeSeconds: 600,
    });
    expect(byDeadline.json().error).toMatchObject({ field: 'remindBeforeSeconds', message: expect.stringMatching(/expiresAt is 1\d\d seconds away/) });
    const { rows } = await h.db.pool.query(`SELECT count(*)::int AS n FROM ${ident(h.db.schema)}.support_reservations WHERE id = 'rem-1'`);
    expect(rows[0].n).toBe(0);

    // One that fits is written, with its reminder.
    const fits = await h.call('POST', '/v1/holds', { id: 'rem-2', customerEmail: 'a@example.com', ttlSeconds: 600, remindBeforeSeconds: 300 });
    expect(fits.statusCode).toBe(201);
    const t = (await h.call('GET', '/v1/holds/rem-2')).json();
    expect(t.emails.map((e: { kind: string }) => e.kind)).toEqual(['reservation-reminder']);
  });

  it('an internationalized domain is accepted (kept as punycode); a non-ASCII local part is refused saying why', async () => {
    const idn = await h.call('POST', '/v1/holds', { id: 'idn-1', customerEmail: 'ana@bücher.de', ttlSeconds: 60 });
    expect(idn.statusCode).toBe(201);
    expect(idn.json().customerEmail).toBe('ana@xn--bcher-kva.de');
    // The same request again, in either form, is the same hold.
    expect((await h.call('POST', '/v1/holds', { id: 'idn-1', customerEmail: 'ana@xn--bcher-kva.de', ttlSeconds: 60 })).statusCode).toBe(200);

    const local = await h.call('POST', '/v1/holds', { customerEmail: 'josé@example.com', ttlSeconds: 60 });
    expect(local.statusCode).toBe(400);
    expect(local.json().error).toEqual({
      code: 'validation_error',
      field: 'customerEmail',
      message: 'customerEmail: must have an ASCII local part (before the @): Amazon SES and Postmark do not accept internationalized ones (SMTPUTF8, RFC 6531)',
    });
    const nothing = await h.call('POST', '/v1/holds', { customerEmail: 'ana@ü..de', ttlSeconds: 60 });
    expect(nothing.json().error).toMatchObject({ field: 'customerEmail', message: 'customerEmail: must be an email address' });
  });
});
