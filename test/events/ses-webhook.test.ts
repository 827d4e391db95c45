import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../../src/db/pool.js';
import { SnsUnavailableError, SnsVerifier } from '../../src/events/sns.js';
import { apiHarness, type ApiHarness } from '../helpers/server.js';
import { LocalSns, SNS_HOST, TOPIC_ARN } from '../helpers/local-sns.js';
import { sentIntent } from '../helpers/sent-intent.js';

/**
 * POST /v1/webhooks/ses: SES event records inside SNS notifications, signed
 * with a local certificate for sns.us-east-1.amazonaws.com that a local
 * HTTPS server serves (the verifier's agent routes the AWS URLs there and
 * trusts only that certificate). Nothing reaches the internet, and the
 * production host rules stay as they are.
 */

let sns: LocalSns;
let h: ApiHarness;
beforeAll(async () => {
  sns = new LocalSns();
  await sns.start();
  h = await apiHarness('ses_webhook', {}, { webhooks: { ses: { topicArns: [TOPIC_ARN], agent: sns.agent } } });
});
afterAll(async () => {
  await h?.close();
  await sns?.stop();
});

const post = (body: unknown, contentType = 'text/plain; charset=UTF-8') =>
  h.app.inject({
    method: 'POST',
    url: '/v1/webhooks/ses',
    headers: { 'content-type': contentType, 'x-amz-sns-message-type': 'Notification' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });

// Shapes from https://docs.aws.amazon.com/ses/latest/dg/event-publishing-retrieving-sns-examples.html
const mail = (messageId: string, to: string) => ({
  timestamp: new Date(Date.now() - 60_000).toISOString(),
  source: 'Support <support@example.com>',
  sourceArn: 'arn:aws:ses:us-east-1:123456789012:identity/example.com',
  sendingAccountId: '123456789012',
  messageId,
  destination: [to],
  headersTruncated: false,
  tags: { 'ses:configuration-set': ['leasehold'], intent_id: ['reservation-expired_x'] },
});
const bounce = (messageId: string, to: string, bounceType = 'Permanent') => ({
  eventType: 'Bounce',
  bounce: {
    bounceType,
    bounceSubType: 'General',
    bouncedRecipients: [{ emailAddress: to, action: 'failed', status: '5.1.1', diagnosticCode: `smtp; 550 5.1.1 <${to}>: user unknown` }],
    timestamp: new Date().toISOString(),
    feedbackId: `0100${messageId}-bounce`,
    reportingMTA: 'dsn; mta.example.com',
  },
  mail: mail(messageId, to),
});
const delivery = (messageId: string, to: string) => ({
  eventType: 'Delivery',
  mail: mail(messageId, to),
  delivery: {
    timestamp: new Date().toISOString(),
    processingTimeMillis: 546,
    recipients: [to],
    smtpResponse: '250 2.6.0 Message received',
    reportingMTA: 'a8-70.smtp-out.amazonses.com',
  },
});
const complaint = (messageId: string, to: string) => ({
  eventType: 'Complaint',
  complaint: {
    complainedRecipients: [{ emailAddress: to }],
    timestamp: new Date().toISOString(),
    feedbackId: `0100${messageId}-complaint`,
    userAgent: 'Mozilla/5.0',
    complaintFeedbackType: 'abuse',
    arrivalDate: new Date().toISOString(),
  },
  mail: mail(messageId, to),
});

const eventsOf = async (messageId: string) =>
  (await h.db.pool.query(`SELECT * FROM ${ident(h.db.schema)}.email_events WHERE provider_message_id = $1 ORDER BY id`, [messageId])).rows;
const suppression = async (address: string) =>
  (await h.db.pool.query(`SELECT * FROM ${ident(h.db.schema)}.suppressions WHERE address = $1`, [address])).rows[0];

describe('verified SES events', () => {
  it('a hard bounce (SignatureVersion 1) is stored against its intent, suppresses the address and ends the trace', async () => {
    const intentId = await sentIntent(h.db.pool, h.db.schema, 'ses-1', { receipt: 'ses-msg-1', email: 'gone@example.com', provider: 'ses' });
    const res = await post(sns.notification(bounce('ses-msg-1', 'gone@example.com'), { version: '1' }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ received: 1, stored: 1, duplicates: 0, unmatched: 0, suppressed: 1 });
    const [event] = await eventsOf('ses-msg-1');
    expect(event).toMatchObject({ provider: 'ses', intent_id: intentId, kind: 'bounced', bounce_type: 'hard', provider_type: 'Bounce/Permanent/General' });
    // The diagnostic quoted the address: stored redacted.
    expect(event.reason).toMatch(/^smtp; 550 5\.1\.1 <+address>+: user unknown$/);
    expect(event.reason).not.toContain('gone@example.com');
    expect(await suppression('gone@example.com')).toMatchObject({ reason: 'hard_bounce', provider: 'ses' });
    const timeline = (await h.call('GET', '/v1/holds/ses-1')).json();
    expect(timeline.outcome).toMatchObject({ kind: 'bounced', bounceType: 'hard', provider: 'ses' });
    expect(timeline.moments.emailOutcomeAt).toBe(timeline.outcome.at);
    // The certificate came from the SNS host of the topic's region, once.
    expect(sns.requests.filter((r) => r.path === sns.certPath)).toHaveLength(1);
  });

  it('a delivery (SignatureVersion 2) is the fifth moment; the same notification again is a duplicate', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'ses-2', { receipt: 'ses-msg-2', provider: 'ses' });
    const notification = sns.notification(delivery('ses-msg-2', 'ses-2@example.com'), { version: '2' });
    expect((await post(notification)).json()).toMatchObject({ stored: 1, suppressed: 0 });
    const again = await post(notification);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ stored: 0, duplicates: 1 });
    // SNS delivering the same SES event under another message id (a second topic) is a duplicate too.
    const record = delivery('ses-msg-2', 'ses-2@example.com');
    record.delivery.timestamp = JSON.parse(notification.Message!).delivery.timestamp;
    expect((await post(sns.notification(record))).json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect(await eventsOf('ses-msg-2')).toHaveLength(1);
    expect((await h.call('GET', '/v1/holds/ses-2')).json().outcome).toMatchObject({ kind: 'delivered' });
  });

  it('a complaint suppresses the address; a delay and an Open are not outcomes', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'ses-3', { receipt: 'ses-msg-3', email: 'Angry@Example.com', provider: 'ses' });
    expect((await post(sns.notification(complaint('ses-msg-3', 'Angry@Example.com')))).json()).toMatchObject({ stored: 1, suppressed: 1 });
    expect(await suppression('angry@example.com')).toMatchObject({ reason: 'complaint' });
    const open = await post(sns.notification({ eventType: 'Open', mail: mail('ses-msg-3', 'x@example.com'), open: { timestamp: new Date().toISOString() } }));
    expect(open.statusCode).toBe(200);
    expect(open.json()).toMatchObject({ stored: 0, ignored: 'Open' });
  });

  it('a soft bounce is stored but suppresses nothing', async () => {
    await sentIntent(h.db.pool, h.db.schema, 'ses-4', { receipt: 'ses-msg-4', email: 'full@example.com', provider: 'ses' });
    expect((await post(sns.notification(bounce('ses-msg-4', 'full@example.com', 'Transient')))).json()).toMatchObject({ stored: 1, suppressed: 0 });
    expect((await eventsOf('ses-msg-4'))[0]).toMatchObject({ kind: 'bounced', bounce_type: 'soft' });
    expect(await suppression('full@example.com')).toBeUndefined();
  });
});

describe('what is refused', () => {
  it('a message whose content was changed after signing: 401 invalid_signature, nothing stored', async () => {
    const signed = sns.notification(bounce('ses-msg-x', 'victim@example.com'));
    const tampered = { ...signed, Message: signed.Message!.replace('Permanent', 'Transient') };
    const res = await post(tampered);
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('invalid_signature');
    expect(await eventsOf('ses-msg-x')).toHaveLength(0);
  });

  it('a message signed by someone else: 401', async () => {
    const other = new LocalSns();
    const forged = other.notification(bounce('ses-msg-y', 'victim@example.com'));
    // Their signature, our certificate URL: the signature does not verify.
    const res = await post({ ...forged, SigningCertURL: sns.certUrl });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('invalid_signature');
  });

  it('unsigned or incomplete: 401; not JSON: 400; a non-SES message: 400', async () => {
    const { Signature: _s, ...unsigned } = sns.notification(delivery('ses-msg-z', 'a@example.com'));
    expect((await post(unsigned)).statusCode).toBe(401);
    expect((await post('{"Type":"Notification"')).statusCode).toBe(400);
    expect((await post('[1,2]')).statusCode).toBe(400);
    const notSes = await post(sns.notification('hello from the topic'));
    expect(notSes.statusCode).toBe(400);
    const noMail = await post(sns.notification({ eventType: 'Delivery', delivery: {} }));
    expect(noMail.statusCode).toBe(400);
    expect(noMail.json().error.field).toBe('Message.mail');
  });

  it('another topic: 401 topic_not_allowed, and no certificate is fetched for it', async () => {
    const before = sns.requests.length;
    const res = await post(sns.notification(delivery('ses-msg-t', 'a@example.com'), { topicArn: 'arn:aws:sns:us-east-1:999999999999:someone-else' }));
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('topic_not_allowed');
    expect(sns.requests.length).toBe(before);
  });

  it('stale: a correctly signed message from two hours ago is refused (401 stale_message)', async () => {
    const res = await post(sns.notification(delivery('ses-msg-old', 'a@example.com'), { timestamp: new Date(Date.now() - 2 * 3600_000) }));
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('stale_message');
  });

  it('a signing certificate anywhere but the topic region’s SNS host is never fetched', async () => {
    const before = sns.requests.length;
    for (const url of [
      `https://${SNS_HOST}.evil.example${sns.certPath}`,
      `https://sns.eu-west-1.amazonaws.com${sns.certPath}`,
      `http://${SNS_HOST}${sns.certPath}`,
      `https://${SNS_HOST}:8443${sns.certPath}`,
    ]) {
      const res = await post({ ...sns.notification(delivery('ses-msg-u', 'a@example.com')), SigningCertURL: url });
      expect(res.statusCode, url).toBe(401);
      expect(res.json().error.code).toBe('invalid_signature');
    }
    expect(sns.requests.length).toBe(before);
  });
});

describe('subscription confirmation', () => {
  it('a verified SubscriptionConfirmation is confirmed by fetching its SubscribeURL on the SNS host', async () => {
    const message = sns.subscriptionConfirmation();
    const res = await post(message);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ confirmed: true });
    const confirm = sns.requests.find((r) => r.query.get('Action') === 'ConfirmSubscription');
    expect(confirm?.query.get('Token')).toBe(message.Token);
    expect(confirm?.query.get('TopicArn')).toBe(TOPIC_ARN);
  });

  it('is not confirmed when unverified, or when the SubscribeURL points anywhere else', async () => {
    const confirmations = () => sns.requests.filter((r) => r.query.get('Action') === 'ConfirmSubscription').length;
    const before = confirmations();
    const tampered = { ...sns.subscriptionConfirmation(), Token: 'changed' };
    expect((await post(tampered)).statusCode).toBe(401);
    // Correctly signed (the URL is part of what is signed), but not on the SNS host: refused before any request.
    const elsewhere = sns.subscriptionConfirmation({ subscribeUrl: `https://attacker.example/?Action=ConfirmSubscription&TopicArn=${TOPIC_ARN}` });
    expect((await post(elsewhere)).statusCode).toBe(401);
    const otherTopic = sns.subscriptionConfirmation({ topicArn: 'arn:aws:sns:us-east-1:999999999999:not-ours' });
    expect((await post(otherTopic)).statusCode).toBe(401);
    expect(confirmations()).toBe(before);
  });
});

describe('AWS out of reach', () => {
  it('a certificate or confirmation that cannot be fetched is "unavailable" (the route answers 503, SNS retries), not a forgery', async () => {
    const gone = new LocalSns();
    await gone.start();
    const message = gone.notification(delivery('ses-msg-gone', 'a@example.com'));
    const confirmation = gone.subscriptionConfirmation();
    const agent = gone.agent;
    await gone.stop(); // its agent now routes the AWS URLs to a closed port
    const verifier = new SnsVerifier({ topicArns: [TOPIC_ARN], agent });
    await expect(verifier.verify(message)).rejects.toBeInstanceOf(SnsUnavailableError);
    await expect(verifier.confirmSubscription(confirmation as never)).rejects.toBeInstanceOf(SnsUnavailableError);
  });
});

it('logs name the topic and the event, never an address', () => {
  expect(h.logs.text).toContain('"event":"email_event.received"');
  for (const address of ['gone@example.com', 'angry@example.com', 'Angry@Example.com', 'full@example.com', 'victim@example.com']) {
    expect(h.logs.text).not.toContain(address);
  }
});
