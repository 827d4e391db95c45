import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpGateway } from '../../src/providers/smtp.js';
import type { TestDatabase } from '../helpers/database.js';
import { FakeSmtp } from '../helpers/fake-smtp.js';
import { attemptOutcomes, crashAfterAcceptance, deliverAll, e2eDatabase, expireHolds, outbox } from '../helpers/provider-e2e.js';

let db: TestDatabase;
let smtp: FakeSmtp;
beforeAll(async () => {
  db = await e2eDatabase('e2e_smtp');
  smtp = new FakeSmtp({ auth: { user: 'leasehold', pass: 'pw' } });
  await smtp.start();
});
afterAll(async () => {
  await smtp.stop();
  await db.close();
});

const gateway = () => new SmtpGateway({ url: smtp.url });
const copiesOf = (id: string) => smtp.received.filter((m) => m.headers['x-leasehold-intent-id'] === id);

describe('end to end through SMTP', () => {
  it('expired holds are emailed once each, with subject, body and intent header', async () => {
    const ids = await expireHolds(db, 'ok', 3);
    expect(await deliverAll(db, gateway())).toEqual({ accepted: 3 });
    const rows = await outbox(db, ids);
    expect(rows.map((r) => r.state)).toEqual(['sent', 'sent', 'sent']);
    for (const row of rows) {
      const copies = copiesOf(row.id);
      expect(copies).toHaveLength(1);
      expect(copies[0]!.subject).toBe('Your reservation has expired');
      expect(copies[0]!.text).toContain('We were holding a reservation for you.');
      // The customer reads no internal ids: they are in the message's headers only.
      const body = copies[0]!.text.split(/\r?\n\r?\n/).slice(1).join('\n\n');
      expect(body).not.toContain(row.id.split(':')[1]!);
      expect(row.receipt).toBe(copies[0]!.headers['message-id']);
      expect(row.possible_duplicate).toBe(false);
    }
  });

  it('a crash between acceptance and receipt: the retry delivers again and is flagged as a possible duplicate', async () => {
    const [id] = await expireHolds(db, 'crash', 1);
    await crashAfterAcceptance(db, { EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url });
    expect(copiesOf(id!)).toHaveLength(1);

    expect(await deliverAll(db, gateway())).toEqual({ accepted: 1 });
    expect(copiesOf(id!)).toHaveLength(2);
    const [row] = await outbox(db, [id!]);
    expect(row).toMatchObject({ state: 'sent', possible_duplicate: true });
    expect(await attemptOutcomes(db, id!)).toEqual([
      { outcome: 'lease_expired', outcome_unknown: true },
      { outcome: 'accepted', outcome_unknown: false },
    ]);
  });
});
