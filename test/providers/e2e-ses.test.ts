import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SesGateway } from '../../src/providers/ses.js';
import type { TestDatabase } from '../helpers/database.js';
import { startSesLocal, type SesLocal } from '../helpers/fake-ses.js';
import { attemptOutcomes, crashAfterAcceptance, deliverAll, e2eDatabase, expireHolds, outbox } from '../helpers/provider-e2e.js';

let db: TestDatabase;
let local: SesLocal;
const credentials = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
beforeAll(async () => {
  db = await e2eDatabase('e2e_ses');
  local = await startSesLocal();
});
afterAll(async () => {
  await local.stop();
  await db.close();
});

const gateway = () => new SesGateway({ region: 'us-east-1', endpoint: local.url, credentials });
const copiesOf = async (id: string) =>
  (await local.emails()).filter((e) => e.headers?.some((h) => h.name === 'X-Leasehold-Intent-Id' && h.value === id));

describe('end to end through SES (aws-ses-v2-local)', () => {
  it('expired holds are emailed once each, with the intent header', async () => {
    const ids = await expireHolds(db, 'ok', 3);
    expect(await deliverAll(db, gateway())).toEqual({ accepted: 3 });
    const rows = await outbox(db, ids);
    expect(rows.map((r) => r.state)).toEqual(['sent', 'sent', 'sent']);
    for (const row of rows) {
      const copies = await copiesOf(row.id);
      expect(copies).toHaveLength(1);
      expect(row.receipt).toBe(copies[0]!.messageId);
      expect(row.possible_duplicate).toBe(false);
    }
  });

  it('a crash between acceptance and receipt: SES cannot deduplicate, so the second acceptance is flagged', async () => {
    const [id] = await expireHolds(db, 'crash', 1);
    await crashAfterAcceptance(db, {
      EMAIL_PROVIDER: 'ses',
      SES_ENDPOINT: local.url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    });
    expect(await copiesOf(id!)).toHaveLength(1);

    expect(await deliverAll(db, gateway())).toEqual({ accepted: 1 });
    const copies = await copiesOf(id!);
    expect(copies).toHaveLength(2); // the documented duplicate policy: at least once ...
    const [row] = await outbox(db, [id!]);
    expect(row).toMatchObject({ state: 'sent', receipt: copies[1]!.messageId, possible_duplicate: true }); // ... and flagged
    expect(await attemptOutcomes(db, id!)).toEqual([
      { outcome: 'lease_expired', outcome_unknown: true },
      { outcome: 'accepted', outcome_unknown: false },
    ]);
  });
});
