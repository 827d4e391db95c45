import knex, { type Knex } from 'knex';
import * as leasehold from '../../src/integrations/knex.js';
import { describeOrmHolds } from '../helpers/orm-holds.js';

describeOrmHolds<Knex.Transaction>('Knex', async (db) => {
  const k = knex({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 }, searchPath: [db.schema] });
  return {
    transaction: (work) => k.transaction(work),
    insertBooking: async (trx, b) => void (await trx('bookings').insert({ id: b.id, hold_id: b.holdId })),
    ...leasehold,
    close: () => k.destroy(),
  };
});
