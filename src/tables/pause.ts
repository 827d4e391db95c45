/**
 * The pause rule, written once for the two tables that hold a pause: the
 * fleet-wide switch (delivery_control, its one row) and each provider
 * account's own (rate_limiter, a row per account). Both have the columns
 * paused, reason, paused_by, paused_at, paused_until and updated_at; the
 * statements are composed by the modules that own those tables.
 */

/**
 * Whether the pause in row `c` is in force at `now` (SQL expressions): a
 * pause whose `paused_until` has passed reads as resumed, with no writer
 * needed to lift it.
 */
export const pausedNow = (c: string, now: string): string =>
  `(${c}.paused AND (${c}.paused_until IS NULL OR ${c}.paused_until > ${now}))`;

/**
 * One statement that pauses the row(s) of `table` matching `where` (an SQL
 * condition on alias `c`; its key column is `key`), with parameters
 * $1 reason, $2 by, $3 untilMs (or null), $4 the operator's name, $5 now
 * (or null for the database's). Precedence, because a send still in flight
 * when an operator pauses can come back with a provider's pause:
 * - an operator's pause replaces whatever pause is in force (the operator's
 *   latest word wins, with its own reason and end);
 * - a provider's pause never changes an operator's pause in force: not its
 *   reason, not its end (a provider condition still there when the
 *   operator's pause ends is met again on the next send);
 * - a provider's pause on top of a provider's pause may only lengthen it:
 *   the later end wins (no end is latest), with its reason.
 * `paused_at` stays when it first stopped. Evaluated against the row under
 * its lock, so concurrent pauses cannot interleave.
 */
export const pauseStatement = (table: string, key: string, where: string): string =>
  `WITH clock AS (
     SELECT coalesce($5::timestamptz, now()) AS now
   ), cur AS (
     SELECT c.${key} AS key, c.reason, c.paused_by, c.paused_at, c.paused_until, ${pausedNow('c', 'clock.now')} AS active
       FROM ${table} c, clock
      WHERE ${where}
        FOR UPDATE OF c
   ), req AS (
     SELECT CASE WHEN $3::float8 IS NULL THEN NULL ELSE clock.now + make_interval(secs => $3::float8 / 1000) END AS until
       FROM clock
   ), decision AS (
     SELECT cur.*, req.until AS new_until,
            NOT cur.active
              OR $2::text = $4::text
              OR (cur.paused_by IS DISTINCT FROM $4::text AND cur.paused_until IS NOT NULL
                  AND (req.until IS NULL OR req.until > cur.paused_until)) AS wins
       FROM cur, req
   )
   UPDATE ${table} c SET
     paused = true,
     reason = CASE WHEN d.wins THEN $1 ELSE d.reason END,
     paused_by = CASE WHEN d.wins THEN $2 ELSE d.paused_by END,
     paused_at = CASE WHEN d.active THEN d.paused_at ELSE clock.now END,
     paused_until = CASE WHEN d.wins THEN d.new_until ELSE d.paused_until END,
     updated_at = CASE WHEN d.wins THEN clock.now ELSE c.updated_at END
     FROM decision d, clock
    WHERE c.${key} = d.key
   RETURNING c.paused, c.reason, c.paused_by, c.paused_at, c.paused_until`;

/** The columns a resume writes (alias-free SET list), `now` an SQL expression. */
export const resumeSet = (now: string): string =>
  `paused = false, reason = NULL, paused_by = NULL, paused_at = NULL, paused_until = NULL, updated_at = ${now}`;
