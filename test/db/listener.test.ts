import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intentsChannel, Listener, notifyIntents } from '../../src/db/listener.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('listener');
});
afterAll(() => db.close());

const until = async (check: () => boolean, what: string) => {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** A checked listener with `ownPayload`, run through `body` with its wake-up count (1 once checked: the wake-up after LISTEN). */
async function withListener(ownPayload: string, body: (wakes: () => number) => Promise<void>): Promise<void> {
  let wakes = 0;
  const listener = new Listener(db.url, intentsChannel(db.schema), () => void wakes++, silentLogger, {
    probe: (payload) => notifyIntents(db.pool, db.schema, payload),
    ownPayload,
  });
  listener.start();
  try {
    // Once checked, it wakes once for whatever was committed while it was not listening.
    await until(() => wakes === 1, 'the wake-up after LISTEN');
    await body(() => wakes);
  } finally {
    await listener.stop();
  }
}

describe('the listener', () => {
  it("wakes for every NOTIFY on the channel but its own process's (ownPayload) and its test notifications", async () => {
    await withListener('process:me', async (wakes) => {
      // Its own process's expiry lane woke the delivery lane already: not a wake-up.
      await notifyIntents(db.pool, db.schema, 'process:me');
      // Another process's expiry lane, one that names none, a reclaim: each a wake-up.
      for (const payload of ['process:other', '', 'reclaimed']) await notifyIntents(db.pool, db.schema, payload);
      await until(() => wakes() === 4, 'three wake-ups');
      // Delivered in order: had the own payload woken, the count would have passed 4 by now.
      await notifyIntents(db.pool, db.schema, 'process:me');
      await notifyIntents(db.pool, db.schema, 'process:other');
      await until(() => wakes() >= 5, 'the last wake-up');
      expect(wakes()).toBe(5);
    });
  });

  it('an empty ownPayload names no process: the NOTIFYs of processes that name none still wake', async () => {
    await withListener('', async (wakes) => {
      await notifyIntents(db.pool, db.schema, '');
      await until(() => wakes() === 2, 'the wake-up for a NOTIFY that names no process');
    });
  });
});
