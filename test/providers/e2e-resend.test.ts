import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResendGateway } from '../../src/providers/resend.js';
import type { TestDatabase } from '../helpers/database.js';
import { FakeResend } from '../helpers/fake-resend.js';
import { attemptOutcomes, crashAfterAcceptance, deliverAll, e2eDatabase, expireHolds, outbox } from '../helpers/provider-e2e.js';

let db: TestDatabase;
let fake: FakeResend;
beforeAll(async () => {
  db = await e2eDatabase('e2e_resend');
  fake = new FakeResend();
  await fake.start();
});
afterAll(async () => {
  await fake.stop();
  await db.close();
});

const gateway = () => new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url });

describe('end to end through Resend', () => {
  it('expired holds are emailed once each, with the intent as idempotency key', async () => {
    const ids = await expireHolds(db, 'ok', 3);
    expect(await deliverAll(db, gateway())).toEqual({ accepted: 3 });
    const rows = await outbox(db, ids);
    expect(rows.map((r) => r.state)).toEqual(['sent', 'sent', 'sent']);
    for (const row of rows) {
      const delivery = fake.deliveries.find((d) => d.headers['X-Leasehold-Intent-Id'] === row.id)!;
      expect(delivery.idempotencyKey).toBe(row.id);
      expect(row.receipt).toBe(delivery.id);
      expect(row.possible_duplicate).toBe(false);
    }
  });

  it('a crash between acceptance and receipt: the retry reuses the key and nothing is delivered twice', async () => {
    const [id] = await expireHolds(db, 'crash', 1);
    await crashAfterAcceptance(db, { EMAIL_PROVIDER: 'resend', RESEND_API_KEY: fake.apiKey, RESEND_BASE_URL: fake.url });
    const first = fake.deliveries.filter((d) => d.headers['X-Leasehold-Intent-Id'] === id);
    expect(first).toHaveLength(1);
    expect((await outbox(db, [id!]))[0]!.state).toBe('pending');

    expect(await deliverAll(db, gateway())).toEqual({ accepted: 1 });
    const sends = fake.requests.filter((r) => r.headers['idempotency-key'] === id);
    expect(sends).toHaveLength(2); // sent twice over the wire ...
    expect(fake.deliveries.filter((d) => d.headers['X-Leasehold-Intent-Id'] === id)).toHaveLength(1); // ... delivered once
    const [row] = await outbox(db, [id!]);
    expect(row).toMatchObject({ state: 'sent', receipt: first[0]!.id, possible_duplicate: false });
    expect(await attemptOutcomes(db, id!)).toEqual([
      { outcome: 'lease_expired', outcome_unknown: true },
      { outcome: 'accepted', outcome_unknown: false },
    ]);
  });
});
