import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import type { TestDatabase } from '../helpers/database.js';
import { FakePostmark } from '../helpers/fake-postmark.js';
import { attemptOutcomes, crashAfterAcceptance, deliverAll, e2eDatabase, expireHolds, outbox } from '../helpers/provider-e2e.js';

let db: TestDatabase;
let fake: FakePostmark;
beforeAll(async () => {
  db = await e2eDatabase('e2e_postmark');
  fake = new FakePostmark();
  await fake.start();
});
afterAll(async () => {
  await fake.stop();
  await db.close();
});

const gateway = () => new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url });
const copiesOf = (id: string) => fake.outbound.filter((m) => m.Metadata.intent_id === id);

describe('end to end through Postmark', () => {
  it('expired holds are emailed once each, with the intent id in metadata and header', async () => {
    const ids = await expireHolds(db, 'ok', 3);
    expect(await deliverAll(db, gateway())).toEqual({ accepted: 3 });
    const rows = await outbox(db, ids);
    expect(rows.map((r) => r.state)).toEqual(['sent', 'sent', 'sent']);
    for (const row of rows) {
      const [sent] = copiesOf(row.id);
      expect(sent!.Headers).toContainEqual({ Name: 'X-Leasehold-Intent-Id', Value: row.id });
      expect(row.receipt).toBe(sent!.MessageID);
      expect(row.possible_duplicate).toBe(false);
    }
  });

  it('a crash between acceptance and receipt: the retry finds the message by metadata and does not send again', async () => {
    const [id] = await expireHolds(db, 'crash', 1);
    await crashAfterAcceptance(db, { EMAIL_PROVIDER: 'postmark', POSTMARK_SERVER_TOKEN: fake.serverToken, POSTMARK_BASE_URL: fake.url });
    const first = copiesOf(id!);
    expect(first).toHaveLength(1);

    const sendsBefore = fake.requests.filter((r) => r.path === '/email').length;
    expect(await deliverAll(db, gateway())).toEqual({ accepted: 1 });
    expect(fake.requests.filter((r) => r.path === '/email').length).toBe(sendsBefore); // looked up, not resent
    expect(fake.requests.some((r) => r.path === '/messages/outbound' && r.query.get('metadata_intent_id') === id)).toBe(true);
    expect(copiesOf(id!)).toHaveLength(1);
    const [row] = await outbox(db, [id!]);
    expect(row).toMatchObject({ state: 'sent', receipt: first[0]!.MessageID, possible_duplicate: false });
    expect(await attemptOutcomes(db, id!)).toEqual([
      { outcome: 'lease_expired', outcome_unknown: true },
      { outcome: 'accepted', outcome_unknown: false },
    ]);
  });
});
