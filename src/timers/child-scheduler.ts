import { ident, withClient } from '../db/pool.js';
import { report, type ChildTarget } from './child-target.js';
import { postToSink } from './sink.js';

const CONCURRENCY = 8;
const POLL_MS = 200;

/**
 * (b) A durable scheduler without an outbox: one job per hold in a table,
 * taken with FOR UPDATE SKIP LOCKED by CONCURRENCY loops. The handler runs
 * inside the job's transaction: expire the hold if it is still held, send
 * the email, delete the job, commit. Nothing is lost (the job stays until
 * its transaction commits), but a crash after the send and before the
 * commit rolls the expiry back, the job runs again and sends again, with
 * nothing to say it is a repeat; and a confirmation can slip in between.
 * (The other order, commit then send, loses the email instead.)
 */
export async function runScheduler(target: ChildTarget): Promise<void> {
  const s = ident(target.schema);
  const runOne = () =>
    withClient(target.pool, async (client) => {
      await client.query('BEGIN');
      try {
        const { rows } = await client.query<{ id: string; hold_id: string }>(
          `SELECT id, hold_id FROM ${s}.timer_jobs WHERE run_at <= now() ORDER BY run_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        );
        const job = rows[0];
        if (job) {
          const { rowCount } = await client.query(
            `UPDATE ${s}.support_reservations SET status = 'expired', expired_at = now() WHERE id = $1 AND status = 'held'`,
            [job.hold_id],
          );
          if (rowCount === 1) await postToSink(target.sinkUrl, 'scheduler', { holdId: job.hold_id, possibleDuplicate: false });
          await client.query(`DELETE FROM ${s}.timer_jobs WHERE id = $1`, [job.id]);
        }
        await client.query('COMMIT');
        return job !== undefined;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  const loop = async () => {
    for (;;) {
      const worked = await runOne().catch((error) => {
        report(error);
        return false;
      });
      if (!worked) await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  for (let i = 0; i < CONCURRENCY; i++) void loop();
}
