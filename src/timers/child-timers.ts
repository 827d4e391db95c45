import { ident } from '../db/pool.js';
import { report, type ChildTarget } from './child-target.js';
import { postToSink } from './sink.js';

/**
 * (a) One in-memory timer per hold. The process that created the holds
 * (`arm`) sets a timer for each at its deadline; the handler expires the
 * hold with a conditional update, so a racing confirmation has exactly one
 * winner, and sends only if it won. A restarted process has no timers for
 * the holds created before the crash: that is the design, not a bug in it.
 */
export async function runTimers(target: ChildTarget, arm: boolean): Promise<void> {
  const s = ident(target.schema);
  const fire = async (id: string) => {
    const { rowCount } = await target.pool.query(
      `UPDATE ${s}.support_reservations SET status = 'expired', expired_at = now() WHERE id = $1 AND status = 'held'`,
      [id],
    );
    if (rowCount === 1) await postToSink(target.sinkUrl, 'timers', { holdId: id, possibleDuplicate: false });
  };
  if (arm) {
    // Stands in for the API process arming a timer as it creates each hold.
    const { rows } = await target.pool.query<{ id: string; expires_at: Date }>(
      `SELECT id, expires_at FROM ${s}.support_reservations WHERE status = 'held'`,
    );
    for (const hold of rows) {
      setTimeout(() => void fire(hold.id).catch(report), Math.max(0, hold.expires_at.getTime() - Date.now()));
    }
  }
  // Stay up like a server would, timers or not.
  setInterval(() => {}, 60_000);
}
