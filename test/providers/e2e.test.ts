import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailGateway } from '../../src/providers/gateway.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { SesGateway } from '../../src/providers/ses.js';
import { SmtpGateway } from '../../src/providers/smtp.js';
import type { TestDatabase } from '../helpers/database.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { startSesLocal, type SesLocal } from '../helpers/fake-ses.js';
import { FakeSmtp } from '../helpers/fake-smtp.js';
import { attemptOutcomes, crashAfterAcceptance, deliverAll, e2eDatabase, expireHolds, outbox, type OutboxRow } from '../helpers/provider-e2e.js';

/**
 * One story per provider, each against its local server: due holds expire
 * and are emailed once each; then a delivery process is killed between the
 * provider's acceptance and the saved receipt, and a second worker sends
 * again. What happens then is each provider's own: Resend dedupes by key,
 * Postmark looks the message up by metadata, SES and SMTP deliver twice and
 * the outbox flags the second acceptance.
 */
interface Copy {
  receipt: string;
}

interface E2eProvider {
  name: string;
  label: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  gateway(): EmailGateway;
  /** The delivery child's environment for this provider. */
  env(): Record<string, string>;
  /** What the provider holds for this intent, found as it carries the intent. */
  copiesOf(id: string): Promise<Copy[]>;
  sentTitle: string;
  /** This provider's own checks of one sent row. */
  checkSent(row: OutboxRow): Promise<void>;
  crashTitle: string;
  /** Called before the retry; the function it returns checks this provider's retry. */
  watchRetry(id: string, first: Copy[]): Promise<(row: OutboxRow) => Promise<void>>;
}

const resend = (() => {
  let fake: FakeResend;
  return {
    name: 'Resend',
    label: 'e2e_resend',
    async start() {
      fake = new FakeResend();
      await fake.start();
    },
    stop: () => fake.stop(),
    gateway: () => new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url }),
    env: () => ({ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: fake.apiKey, RESEND_BASE_URL: fake.url }),
    copiesOf: async (id: string) => fake.deliveries.filter((d) => d.headers['X-Leasehold-Intent-Id'] === id).map((d) => ({ receipt: d.id })),
    sentTitle: 'expired holds are emailed once each, in one batch request under its batch key',
    async checkSent(row: OutboxRow) {
      const delivery = fake.deliveries.find((d) => d.headers['X-Leasehold-Intent-Id'] === row.id)!;
      // Due together, they went in one /emails/batch request (idempotency key `batch-<batch id>`).
      expect(delivery.batchKey).toMatch(/^batch-[0-9a-f-]{36}$/);
      expect(new Set(fake.deliveries.map((d) => d.batchKey))).toEqual(new Set([delivery.batchKey]));
    },
    crashTitle: 'a crash between acceptance and receipt: the retry reuses the key and nothing is delivered twice',
    async watchRetry(id: string, first: Copy[]) {
      return async (row: OutboxRow) => {
        const sends = fake.requests.filter((r) => r.headers['idempotency-key'] === id);
        expect(sends).toHaveLength(2); // sent twice over the wire ...
        expect(await this.copiesOf(id)).toHaveLength(1); // ... delivered once
        expect(row).toMatchObject({ receipt: first[0]!.receipt, possible_duplicate: false });
      };
    },
  } satisfies E2eProvider;
})();

const postmark = (() => {
  let fake: FakePostmark;
  const outboundOf = (id: string) => fake.outbound.filter((m) => m.Metadata.intent_id === id);
  const sends = () => fake.requests.filter((r) => r.path === '/email').length;
  return {
    name: 'Postmark',
    label: 'e2e_postmark',
    async start() {
      fake = new FakePostmark();
      await fake.start();
    },
    stop: () => fake.stop(),
    gateway: () => new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url }),
    env: () => ({ EMAIL_PROVIDER: 'postmark', POSTMARK_SERVER_TOKEN: fake.serverToken, POSTMARK_BASE_URL: fake.url }),
    copiesOf: async (id: string) => outboundOf(id).map((m) => ({ receipt: m.MessageID })),
    sentTitle: 'expired holds are emailed once each, with the intent id in metadata and header',
    async checkSent(row: OutboxRow) {
      const [sent] = outboundOf(row.id);
      expect(sent!.Headers).toContainEqual({ Name: 'X-Leasehold-Intent-Id', Value: row.id });
    },
    crashTitle: 'a crash between acceptance and receipt: the retry finds the message by metadata and does not send again',
    async watchRetry(id: string, first: Copy[]) {
      const sendsBefore = sends();
      return async (row: OutboxRow) => {
        expect(sends()).toBe(sendsBefore); // looked up, not resent
        expect(fake.requests.some((r) => r.path === '/messages/outbound' && r.query.get('metadata_intent_id') === id)).toBe(true);
        expect(outboundOf(id)).toHaveLength(1);
        expect(row).toMatchObject({ receipt: first[0]!.receipt, possible_duplicate: false });
      };
    },
  } satisfies E2eProvider;
})();

const ses = (() => {
  let local: SesLocal;
  const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
  return {
    name: 'SES (aws-ses-v2-local)',
    label: 'e2e_ses',
    async start() {
      local = await startSesLocal();
    },
    stop: () => local.stop(),
    gateway: () => new SesGateway({ region: 'us-east-1', endpoint: local.url, credentials }),
    env: () => ({
      EMAIL_PROVIDER: 'ses',
      SES_ENDPOINT: local.url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    }),
    copiesOf: async (id: string) =>
      (await local.emails())
        .filter((e) => e.headers?.some((h) => h.name === 'X-Leasehold-Intent-Id' && h.value === id))
        .map((e) => ({ receipt: e.messageId })),
    sentTitle: 'expired holds are emailed once each, with the intent header',
    async checkSent() {},
    crashTitle: 'a crash between acceptance and receipt: SES cannot deduplicate, so the second acceptance is flagged',
    async watchRetry(id: string) {
      return async (row: OutboxRow) => {
        const copies = await this.copiesOf(id);
        expect(copies).toHaveLength(2); // the documented duplicate policy: at least once ...
        expect(row).toMatchObject({ receipt: copies[1]!.receipt, possible_duplicate: true }); // ... and flagged
      };
    },
  } satisfies E2eProvider;
})();

const smtp = (() => {
  let server: FakeSmtp;
  const receivedFor = (id: string) => server.received.filter((m) => m.headers['x-leasehold-intent-id'] === id);
  return {
    name: 'SMTP',
    label: 'e2e_smtp',
    async start() {
      server = new FakeSmtp({ auth: { user: 'leasehold', pass: 'pw' } });
      await server.start();
    },
    stop: () => server.stop(),
    gateway: () => new SmtpGateway({ url: server.url }),
    env: () => ({ EMAIL_PROVIDER: 'smtp', SMTP_URL: server.url }),
    copiesOf: async (id: string) => receivedFor(id).map((m) => ({ receipt: m.headers['message-id']! })),
    sentTitle: 'expired holds are emailed once each, with subject, body and intent header',
    async checkSent(row: OutboxRow) {
      const [copy] = receivedFor(row.id);
      expect(copy!.subject).toBe('Your reservation has expired');
      expect(copy!.text).toContain('We were holding a reservation for you.');
      // The customer reads no internal ids: they are in the message's headers only.
      const body = copy!.text.split(/\r?\n\r?\n/).slice(1).join('\n\n');
      expect(body).not.toContain(row.id.split(':')[1]!);
    },
    crashTitle: 'a crash between acceptance and receipt: the retry delivers again and is flagged as a possible duplicate',
    async watchRetry(id: string) {
      return async (row: OutboxRow) => {
        expect(receivedFor(id)).toHaveLength(2);
        expect(row).toMatchObject({ possible_duplicate: true });
      };
    },
  } satisfies E2eProvider;
})();

const providers: E2eProvider[] = [resend, postmark, ses, smtp];

describe.each(providers)('end to end through $name', (provider) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await e2eDatabase(provider.label);
    await provider.start();
  });
  afterAll(async () => {
    await provider.stop();
    await db.close();
  });

  it(provider.sentTitle, async () => {
    const ids = await expireHolds(db, 'ok', 3);
    expect(await deliverAll(db, provider.gateway())).toEqual({ accepted: 3 });
    const rows = await outbox(db, ids);
    expect(rows.map((r) => r.state)).toEqual(['sent', 'sent', 'sent']);
    for (const row of rows) {
      const copies = await provider.copiesOf(row.id);
      expect(copies).toHaveLength(1);
      expect(row.receipt).toBe(copies[0]!.receipt);
      expect(row.possible_duplicate).toBe(false);
      await provider.checkSent(row);
    }
  });

  it(provider.crashTitle, async () => {
    const [id] = await expireHolds(db, 'crash', 1);
    await crashAfterAcceptance(db, provider.env());
    const first = await provider.copiesOf(id!);
    expect(first).toHaveLength(1);
    expect((await outbox(db, [id!]))[0]!.state).toBe('pending');

    const checkRetry = await provider.watchRetry(id!, first);
    expect(await deliverAll(db, provider.gateway())).toEqual({ accepted: 1 });
    const [row] = await outbox(db, [id!]);
    expect(row!.state).toBe('sent');
    await checkRetry(row!);
    expect(await attemptOutcomes(db, id!)).toEqual([
      { outcome: 'lease_expired', outcome_unknown: true },
      { outcome: 'accepted', outcome_unknown: false },
    ]);
  });
});
