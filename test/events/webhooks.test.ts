import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';
import { recordAcceptance, sentIntent } from '../helpers/sent-intent.js';

/**
 * POST /v1/webhooks/resend and /v1/webhooks/postmark with the providers'
 * documented payloads: verified, stored once, matched to their intents by
 * the receipt, feeding the suppression list and the trace's fifth moment.
 */

const RESEND_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const POSTMARK = { user: 'postmark-hooks', password: 'p4ssw0rd-0123456789' };

let h: ApiHarness;
let unconfigured: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('webhooks', {}, { webhooks: { resend: { secret: RESEND_SECRET }, postmark: POSTMARK } });
  unconfigured = await apiHarness('webhooks_off');
});
afterAll(async () => {
  await h?.close();
  await unconfigured?.close();
});

/** Sign like Svix: HMAC-SHA256 of "id.timestamp.body" with the endpoint secret. */
function svixHeaders(body: string, options: { id?: string; at?: Date; secret?: string } = {}): Record<string, string> {
  const id = options.id ?? `msg_${randomUUID().replace(/-/g, '')}`;
  const at = options.at ?? new Date();
  return {
    'content-type': 'application/json',
    'svix-id': id,
    'svix-timestamp': String(Math.floor(at.getTime() / 1000)),
    'svix-signature': new Webhook(options.secret ?? RESEND_SECRET).sign(id, at, body),
  };
}

const resend = (payload: unknown, headers?: Record<string, string>) => {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return h.app.inject({ method: 'POST', url: '/v1/webhooks/resend', headers: headers ?? svixHeaders(body), payload: body });
};

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const postmark = (payload: unknown, authorization: string | null = basic(POSTMARK.user, POSTMARK.password)) =>
  h.app.inject({
    method: 'POST',
    url: '/v1/webhooks/postmark',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    payload: JSON.stringify(payload),
  });

// https://resend.com/docs/dashboard/webhooks/event-types
const resendEvent = (type: string, emailId: string, to: string, extra: Record<string, unknown> = {}, createdAt = new Date()) => ({
  type,
  created_at: createdAt.toISOString(),
  data: {
    created_at: new Date(createdAt.getTime() - 2000).toISOString(),
    email_id: emailId,
    from: 'Support <support@example.com>',
    to: [to],
    subject: 'Your reservation expired',
    tags: { intent_id: 'reservation-expired_x', template: 'reservation-expired' },
    ...extra,
  },
});

const eventsOf = async (messageId: string) =>
  (await h.db.pool.query(`SELECT * FROM ${ident(h.db.schema)}.email_events WHERE provider_message_id = $1 ORDER BY occurred_at, id`, [messageId])).rows;
const suppression = async (address: string) =>
  (await h.db.pool.query(`SELECT * FROM ${ident(h.db.schema)}.suppressions WHERE address = $1`, [address])).rows[0];

describe('Resend (Svix signatures)', () => {
  it('email.delivered is stored against its intent and becomes the fifth moment of the trace', async () => {
    const intentId = await sentIntent(h.db.pool, h.db.schema, 'rs-1', { receipt: 're-msg-1', provider: 'resend' });
    const res = await resend(resendEvent('email.delivered', 're-msg-1', 'rs-1@example.com'));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: 1, stored: 1, duplicates: 0, unmatched: 0, suppressed: 0 });
    expect((await eventsOf('re-msg-1'))[0]).toMatchObject({ provider: 'resend', intent_id: intentId, kind: 'delivered', bounce_type: null });
    const t = (await h.call('GET', '/v1/holds/rs-1')).json();
    expect(t.outcome).toMatchObject({ kind: 'delivered', provider: 'resend' });
    expect(t.moments.emailOutcomeAt).toBe(t.outcome.at);
    expect(t.events).toHaveLength(1);
    expect(t.lateness.outcomeSeconds).toEqual(expect.any(Number));
  });

  it('a permanent email.bounced suppresses the recipient; its reason is stored without the address', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'rs-2', { receipt: 're-msg-2', email: 'Nobody@Example.com', provider: 'resend' });
    const bounce = { type: 'Permanent', subType: 'General', message: 'The email to nobody@example.com bounced: mailbox does not exist.' };
    const res = await resend(resendEvent('email.bounced', 're-msg-2', 'Nobody@Example.com', { bounce }));
    expect(res.json()).toMatchObject({ stored: 1, suppressed: 1 });
    const [event] = await eventsOf('re-msg-2');
    expect(event).toMatchObject({ kind: 'bounced', bounce_type: 'hard', provider_type: 'email.bounced/Permanent/General' });
    expect(event.reason).toContain('<address>');
    expect(event.reason).not.toContain('nobody@example.com');
    expect(await suppression('nobody@example.com')).toMatchObject({ reason: 'hard_bounce', provider: 'resend' });
    expect((await h.call('GET', '/v1/holds/rs-2')).json().outcome).toMatchObject({ kind: 'bounced', bounceType: 'hard' });
  });

  it('email.complained suppresses; email.delivery_delayed is stored; email.opened is acknowledged and ignored', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'rs-3', { receipt: 're-msg-3', email: 'spam-button@example.com', provider: 'resend' });
    expect((await resend(resendEvent('email.delivery_delayed', 're-msg-3', 'spam-button@example.com'))).json()).toMatchObject({ stored: 1 });
    expect((await resend(resendEvent('email.complained', 're-msg-3', 'spam-button@example.com'))).json()).toMatchObject({ stored: 1, suppressed: 1 });
    const opened = await resend(resendEvent('email.opened', 're-msg-3', 'spam-button@example.com'));
    expect(opened.statusCode).toBe(200);
    expect(opened.json()).toMatchObject({ stored: 0, ignored: 'email.opened' });
    expect((await eventsOf('re-msg-3')).map((e) => e.kind)).toEqual(['delayed', 'complained']);
    expect(await suppression('spam-button@example.com')).toMatchObject({ reason: 'complaint' });
  });

  it('a redelivery of the same event (same svix-id, freshly signed) is a duplicate, stored once', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'rs-4', { receipt: 're-msg-4', provider: 'resend' });
    const body = JSON.stringify(resendEvent('email.delivered', 're-msg-4', 'rs-4@example.com'));
    const id = 'msg_redelivered';
    expect((await resend(body, svixHeaders(body, { id }))).json()).toMatchObject({ stored: 1 });
    const again = await resend(body, svixHeaders(body, { id }));
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect(await eventsOf('re-msg-4')).toHaveLength(1);
  });

  it('refuses what Resend did not sign: missing headers, another secret, a replayed signature on another body, a stale timestamp', async () => {
    const body = JSON.stringify(resendEvent('email.bounced', 're-msg-victim', 'victim@example.com', { bounce: { type: 'Permanent' } }));
    const cases: Array<[string, Record<string, string>, string]> = [
      ['no signature', { 'content-type': 'application/json' }, 'missing_signature'],
      ['another secret', svixHeaders(body, { secret: `whsec_${randomBytes(24).toString('base64')}` }), 'invalid_signature'],
      ['a signature of another body', svixHeaders(JSON.stringify(resendEvent('email.delivered', 'x', 'x@example.com'))), 'invalid_signature'],
      ['ten minutes old', svixHeaders(body, { at: new Date(Date.now() - 10 * 60_000) }), 'stale_message'],
      ['ten minutes ahead', svixHeaders(body, { at: new Date(Date.now() + 10 * 60_000) }), 'stale_message'],
      ['garbage signature', { ...svixHeaders(body), 'svix-signature': 'v1,AAAA' }, 'invalid_signature'],
    ];
    for (const [what, headers, code] of cases) {
      const res = await resend(body, headers);
      expect(res.statusCode, what).toBe(401);
      expect(res.json().error.code, what).toBe(code);
      expect(res.headers['www-authenticate'], what).toBeUndefined();
    }
    expect(await eventsOf('re-msg-victim')).toHaveLength(0);
    expect(await suppression('victim@example.com')).toBeUndefined();
  });

  it('signed but malformed: 400 naming the field, nothing stored', async () => {
    const notJson = await resend('{"type":');
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error.code).toBe('invalid_json');
    const noId = await resend({ type: 'email.delivered', created_at: new Date().toISOString(), data: { to: ['a@example.com'] } });
    expect(noId.statusCode).toBe(400);
    expect(noId.json().error.field).toBe('data.email_id');
    const badDate = await resend({ ...resendEvent('email.delivered', 'm', 'a@example.com'), created_at: 'yesterday' });
    expect(badDate.statusCode).toBe(400);
    expect(badDate.json().error.field).toBe('created_at');
  });

  it('bodies up to 512 KiB are read (SNS messages reach 256 KiB); larger ones are 413', async () => {
    const big = resendEvent('email.delivered', 're-big-1', 'big@example.com', { subject: 'x'.repeat(300 * 1024) });
    expect((await resend(big)).statusCode).toBe(200);
    const tooBig = resendEvent('email.delivered', 're-big-2', 'big@example.com', { subject: 'x'.repeat(600 * 1024) });
    expect((await resend(tooBig)).statusCode).toBe(413);
    expect((await resend(tooBig)).json().error).toEqual({ code: 'payload_too_large', message: 'the body is larger than the limit (512 KiB)' });
  });

  it('an unknown message id is kept with no intent, not an error', async () => {
    const res = await resend(resendEvent('email.delivered', 're-unknown-1', 'stranger@example.com'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ stored: 1, unmatched: 1 });
    expect((await eventsOf('re-unknown-1'))[0]).toMatchObject({ intent_id: null, kind: 'delivered' });
  });

  it('out of order: a bounce reported before the delivery it follows, and before the receipt was recorded', async () => {
    // The webhook outruns the delivery lane: the events arrive before the acceptance is recorded.
    await sentIntent(h.db.pool, h.db.schema, 'rs-5', { receipt: 'placeholder-not-this', provider: 'resend' });
    await h.db.pool.query(`UPDATE ${ident(h.db.schema)}.email_outbox SET receipt = NULL, state = 'pending', sent_at = NULL, finished_at = NULL WHERE id = 'reservation-expired:rs-5'`);
    const t0 = Date.now();
    const bounced = resendEvent('email.bounced', 're-msg-5', 'late-bounce@example.com', { bounce: { type: 'Permanent', subType: 'General', message: 'mailbox gone' } }, new Date(t0 + 5000));
    const delivered = resendEvent('email.delivered', 're-msg-5', 'late-bounce@example.com', {}, new Date(t0 + 1000));
    expect((await resend(bounced)).json()).toMatchObject({ stored: 1, unmatched: 1, suppressed: 1 });
    expect((await resend(delivered)).json()).toMatchObject({ stored: 1, unmatched: 1 });
    // Now the delivery lane records the receipt.
    await recordAcceptance(h.db.pool, h.db.schema, 'reservation-expired:rs-5', 're-msg-5', 'resend');
    const t = (await h.call('GET', '/v1/holds/rs-5')).json();
    // Both events are found by the receipt, in the provider's order, and the later hard bounce decides.
    expect(t.events.map((e: { kind: string }) => e.kind)).toEqual(['delivered', 'bounced']);
    expect(t.outcome).toMatchObject({ kind: 'bounced', bounceType: 'hard' });
    expect(new Date(t.moments.emailOutcomeAt).getTime()).toBe(t0 + 5000);
  });

  it('a delivery reported after a hard bounce does not undo it', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'rs-6', { receipt: 're-msg-6', provider: 'resend' });
    const t0 = Date.now();
    await resend(resendEvent('email.bounced', 're-msg-6', 'rs-6@example.com', { bounce: { type: 'Permanent' } }, new Date(t0)));
    await resend(resendEvent('email.delivered', 're-msg-6', 'rs-6@example.com', {}, new Date(t0 + 3000)));
    expect((await h.call('GET', '/v1/holds/rs-6')).json().outcome).toMatchObject({ kind: 'bounced' });
  });
});

describe('Postmark (basic auth in the webhook URL)', () => {
  // https://postmarkapp.com/developer/webhooks/delivery-webhook, .../bounce-webhook, .../spam-complaint-webhook
  const delivery = (messageId: string, recipient: string) => ({
    RecordType: 'Delivery',
    ServerID: 23,
    MessageStream: 'outbound',
    MessageID: messageId,
    Recipient: recipient,
    Tag: 'reservation-expired',
    DeliveredAt: new Date().toISOString(),
    Details: 'smtp;250 2.0.0 OK 1480624905 l186si10190883ite.73 - gsmtp',
    Metadata: { intent_id: 'reservation-expired:x' },
  });
  const bounce = (messageId: string, email: string, type = 'HardBounce', typeCode = 1, id = Math.floor(Math.random() * 1e9)) => ({
    RecordType: 'Bounce',
    ID: id,
    Type: type,
    TypeCode: typeCode,
    Name: type === 'HardBounce' ? 'Hard bounce' : type,
    Tag: 'reservation-expired',
    MessageID: messageId,
    ServerID: 23,
    MessageStream: 'outbound',
    Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
    Details: `smtp;550 5.1.1 The email account that you tried to reach does not exist: ${email}`,
    Email: email,
    From: 'support@example.com',
    BouncedAt: new Date().toISOString(),
    DumpAvailable: true,
    Inactive: type === 'HardBounce',
    CanActivate: true,
    Subject: 'Your reservation expired',
    Content: 'Return-Path: <>',
    Metadata: {},
  });

  it('without or with wrong credentials: 401 invalid_credentials asking for Basic auth', async () => {
    const record = bounce('pm-victim', 'victim2@example.com');
    for (const authorization of [null, basic(POSTMARK.user, 'wrong-password-0000'), basic('someone', POSTMARK.password), 'Bearer x', 'Basic !!!']) {
      const res = await postmark(record, authorization);
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.json().error.code).toBe('invalid_credentials');
      expect(res.headers['www-authenticate']).toBe('Basic realm="leasehold webhooks"');
    }
    expect(await eventsOf('pm-victim')).toHaveLength(0);
  });

  it('Delivery is stored once however often Postmark sends it', async () => {
    const intentId = await sentIntent(h.db.pool, h.db.schema, 'pm-1', { receipt: 'pm-msg-1', provider: 'postmark' });
    const record = delivery('pm-msg-1', 'pm-1@example.com');
    expect((await postmark(record)).json()).toMatchObject({ stored: 1, unmatched: 0 });
    expect((await postmark(record)).json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect(await eventsOf('pm-msg-1')).toEqual([expect.objectContaining({ intent_id: intentId, kind: 'delivered', provider_type: 'Delivery' })]);
  });

  it('a HardBounce and a SpamComplaint suppress; a Transient bounce and an AutoResponder do not', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'pm-2', { receipt: 'pm-msg-2', email: 'pm-hard@example.com', provider: 'postmark' });
    expect((await postmark(bounce('pm-msg-2', 'pm-hard@example.com'))).json()).toMatchObject({ stored: 1, suppressed: 1 });
    expect(await suppression('pm-hard@example.com')).toMatchObject({ reason: 'hard_bounce', provider: 'postmark' });

    await sentIntent(h.db.pool, h.db.schema, 'pm-3', { receipt: 'pm-msg-3', email: 'pm-spam@example.com', provider: 'postmark' });
    const complaint = { ...bounce('pm-msg-3', 'pm-spam@example.com', 'SpamComplaint', 100001), RecordType: 'SpamComplaint' };
    expect((await postmark(complaint)).json()).toMatchObject({ stored: 1, suppressed: 1 });
    expect(await suppression('pm-spam@example.com')).toMatchObject({ reason: 'complaint' });

    await sentIntent(h.db.pool, h.db.schema, 'pm-4', { receipt: 'pm-msg-4', email: 'pm-soft@example.com', provider: 'postmark' });
    expect((await postmark(bounce('pm-msg-4', 'pm-soft@example.com', 'Transient', 2))).json()).toMatchObject({ stored: 1, suppressed: 0 });
    expect((await eventsOf('pm-msg-4'))[0]).toMatchObject({ kind: 'bounced', bounce_type: 'soft' });
    const auto = await postmark(bounce('pm-msg-4', 'pm-soft@example.com', 'AutoResponder', 64));
    expect(auto.json()).toMatchObject({ stored: 0, ignored: 'Bounce/AutoResponder' });
    expect(await suppression('pm-soft@example.com')).toBeUndefined();
    // The same bounce (same bounce ID) again: a duplicate.
    const again = bounce('pm-msg-2', 'pm-hard@example.com');
    const first = (await eventsOf('pm-msg-2'))[0];
    expect(first.provider_event_id).toMatch(/^Bounce:\d+$/);
    again.ID = Number(first.provider_event_id.split(':')[1]);
    expect((await postmark(again)).json()).toMatchObject({ stored: 0, duplicates: 1 });
  });

  it('malformed but authenticated: 400; Open and Click are ignored', async () => {
    expect((await postmark({ RecordType: 'Delivery' })).statusCode).toBe(400);
    expect((await postmark({ RecordType: 'Delivery', MessageID: 'm', DeliveredAt: 'not a date' })).json().error.field).toBe('DeliveredAt');
    expect((await postmark([1, 2, 3])).statusCode).toBe(400);
    expect((await postmark({ RecordType: 'Open', MessageID: 'pm-msg-1' })).json()).toMatchObject({ ignored: 'Open' });
  });
});

describe('a provider that is not configured', () => {
  it.each(['resend', 'postmark', 'ses'])('%s answers 401 webhook_not_configured, whatever is sent', async (provider) => {
    const res = await unconfigured.app.inject({
      method: 'POST',
      url: `/v1/webhooks/${provider}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(resendEvent('email.delivered', 'x', 'x@example.com')),
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('webhook_not_configured');
  });
});

describe('webhooks are outside the bearer token, /v1 is not', () => {
  it('a webhook needs no bearer token, and a bearer token does not replace its signature', async () => {
    const body = JSON.stringify(resendEvent('email.delivered', 'x', 'x@example.com'));
    const res = await h.app.inject({ method: 'POST', url: '/v1/webhooks/resend', headers: { 'content-type': 'application/json', authorization: 'Bearer test-token-0123456789abcdef' }, payload: body });
    expect(res.json().error.code).toBe('missing_signature');
    expect((await h.app.inject({ method: 'GET', url: '/v1/suppressions' })).statusCode).toBe(401);
  });
});

describe('metrics and logs', () => {
  it('counts events by provider and kind, and webhook requests by result, with no address anywhere', async () => {
    const scrape = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(scrape).toMatch(/^leasehold_email_events_total\{provider="resend",kind="delivered"\} [1-9]/m);
    expect(scrape).toMatch(/^leasehold_email_events_total\{provider="postmark",kind="bounced"\} [1-9]/m);
    expect(scrape).toMatch(/^leasehold_webhook_requests_total\{provider="resend",result="unauthorized"\} [1-9]/m);
    expect(scrape).toMatch(/^leasehold_email_complaint_rate [0-9.e-]+$/m);
    expect(scrape).toMatch(/^leasehold_email_bounce_rate [0-9.e-]+$/m);
    expect(scrape).toMatch(/^leasehold_suppressions [1-9]/m);
    expect(scrape).not.toContain('@');
    for (const address of ['nobody@example.com', 'Nobody@Example.com', 'spam-button@example.com', 'pm-hard@example.com', 'victim@example.com', 'stranger@example.com']) {
      expect(h.logs.text).not.toContain(address);
    }
    expect(h.logs.events().some((e) => e.event === 'suppression.added' && e.reason === 'hard_bounce')).toBe(true);
  });
});
