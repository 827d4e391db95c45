import type pg from 'pg';
import { DEFAULTS } from '../defaults.js';
import { ident, restartTransaction, withTransaction, type Queryable } from '../db/pool.js';
import { ConfigError, ExpireHookError, isConnectionError } from '../errors.js';
import { redactAddresses } from '../providers/provider-common.js';
import { hookFailuresClearSql } from '../tables/hook-failures.js';
import { HOOK_NAME, HOOK_NAME_RULE } from '../model/expire-hook-name.js';
import type { DueOutlook, ExpiredHold } from '../tables/holds.js';

/**
 * The application's hook inside leasehold's transaction: the SQL
 * function LEASEHOLD_EXPIRE_HOOK names, or the library's `onExpired`
 * callback, runs on the transaction that changed the holds, after their
 * state and intents are written and before the commit, so the application's
 * rows (a freed slot) commit with the expiry or neither does.
 *
 * In the expiry lane a failing hook must not stop the lane: the batch is
 * tried under a savepoint; when the hook raises (or runs past its
 * statement_timeout), the batch rolls back to it and is bisected, each half
 * expired again under a savepoint of its own, until the holds whose hook
 * call fails by itself are found. Every other hold of the batch expires in
 * the same transaction; the failing ones stay `held` and are recorded for a
 * retry with back-off (tables/hook-failures.ts).
 */

/** A hold the hook is told about: its id and its expiry (confirm, cancel and extend through the API pass the hold's id alone to the SQL function). */
export interface ExpiredHoldInfo {
  id: string;
  /** The expiry email's intent, or null for a hold expired without one. */
  intentId: string | null;
  expiresAt: Date;
  expiredAt: Date;
}

/**
 * The library's hook: runs on the expiry transaction (`tx`: only `query`,
 * refused once the call is given up on), after the holds are expired and
 * their intents written, before the commit. Throwing (or a statement of its
 * own failing) rolls its holds back to `held`; see the module comment.
 */
export type OnExpired = (tx: Queryable, holds: ExpiredHoldInfo[]) => Promise<void> | void;


/** A hook call that failed: SQLSTATE (57014 for a statement_timeout) and the database's message, addresses replaced. */
export interface HookCallFailure {
  code: string | null;
  error: string;
  timedOut: boolean;
}

export interface FailedHold extends HookCallFailure {
  holdId: string;
}

/** How the hook runs: the callback and the longest it may take (a statement_timeout inside the transaction). */
export interface HookSettings {
  onExpired: OnExpired;
  /** The hook's name in logs and errors (the SQL function's, or `onExpired`). */
  name: string;
  timeoutMs: number;
}

/**
 * LEASEHOLD_EXPIRE_HOOK as a callback: `SELECT "<schema>"."<function>"($1::text[])`
 * with the holds' ids. The name is checked against HOOK_NAME and quoted,
 * never spliced in as given.
 */
export function sqlExpireHook(name: string): OnExpired {
  const match = HOOK_NAME.exec(name);
  if (!match) throw new ConfigError('LEASEHOLD_EXPIRE_HOOK', `${HOOK_NAME_RULE} (got ${JSON.stringify(name)})`);
  const text = `SELECT ${ident(match[1]!)}.${ident(match[2]!)}($1::text[])`;
  const hook: OnExpired = async (tx, holds) => {
    await tx.query(text, [holds.map((h) => h.id)]);
  };
  // Its name in logs and errors is the function's.
  return Object.defineProperty(hook, 'name', { value: name });
}

/**
 * At start, after migrating: the named function must exist and take one
 * text[] (to_regprocedure, so an overload taking something else does not
 * count), and be a function (SELECT cannot call a procedure). Else a
 * ConfigError naming LEASEHOLD_EXPIRE_HOOK, which the CLI exits 2 with.
 */
export async function checkExpireHook(db: Queryable, name: string): Promise<void> {
  const match = HOOK_NAME.exec(name);
  if (!match) throw new ConfigError('LEASEHOLD_EXPIRE_HOOK', `${HOOK_NAME_RULE} (got ${JSON.stringify(name)})`);
  const { rows } = await db.query<{ kind: string | null }>(
    `SELECT (SELECT p.prokind::text FROM pg_catalog.pg_proc p WHERE p.oid = to_regprocedure(format('%I.%I(text[])', $1::text, $2::text))) AS kind`,
    [match[1], match[2]],
  );
  const kind = rows[0]?.kind ?? null;
  if (kind === null) {
    throw new ConfigError('LEASEHOLD_EXPIRE_HOOK', `no function ${name}(text[]) in this database (create it first, e.g. CREATE FUNCTION ${name}(ids text[]) RETURNS void ...)`);
  }
  if (kind !== 'f') throw new ConfigError('LEASEHOLD_EXPIRE_HOOK', `${name}(text[]) is a ${kind === 'p' ? 'procedure' : 'aggregate or window function'}; it must be a plain function`);
}

const describeFailure = (error: unknown, timedOut = false): HookCallFailure => {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : null;
  const message = typeof e?.message === 'string' && e.message ? e.message : String(error);
  // The application's own message may quote a customer; none reaches a log or the table.
  return { code, error: redactAddresses(message).slice(0, 1000), timedOut: timedOut || code === '57014' };
};

const infoOf = (h: ExpiredHold): ExpiredHoldInfo => ({ id: h.id, intentId: h.intent_id, expiresAt: h.expires_at, expiredAt: h.expired_at });

/**
 * One call of the hook on `client`, inside the caller's transaction (or
 * savepoint): the hook's rows of expire_hook_failures are cleared and its
 * statement_timeout set in one round trip (SET LOCAL: gone with the
 * transaction or a rollback to the savepoint), then the hook runs. The
 * callback gets a `tx` that refuses queries once the call is given up on, so
 * nothing it sends late can commit with the batch. Returns the
 * statement_timeout in force before, for `restoreTimeout`.
 */
async function callHook(client: Queryable, schema: string, hook: HookSettings, holds: ExpiredHoldInfo[]): Promise<string> {
  const { rows } = await client.query<{ previous: string }>(
    `WITH cleared AS (${hookFailuresClearSql(ident(schema), '$2::text[]')})
     SELECT current_setting('statement_timeout') AS previous, set_config('statement_timeout', $1, true) AS now_set,
            (SELECT count(*) FROM cleared) AS cleared`,
    [String(hook.timeoutMs), holds.map((h) => h.id)],
  );
  let open = true;
  const tx: Queryable = {
    query: (text: string, values?: unknown[]) =>
      open ? client.query(text, values) : Promise.reject(new Error(`${hook.name}: the expiry transaction is no longer this call's (it ran past ${hook.timeoutMs} ms)`)),
  };
  let timer: NodeJS.Timeout | undefined;
  // A callback busy outside the database is not stopped by statement_timeout:
  // give up on it a second later (the server's timeout, the clearer message, wins for SQL).
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${hook.name} did not finish within ${hook.timeoutMs} ms`), { code: '57014' })), hook.timeoutMs + 1000);
  });
  try {
    await Promise.race([Promise.resolve().then(() => hook.onExpired(tx, holds)), late]);
  } finally {
    open = false;
    clearTimeout(timer);
  }
  return rows[0]!.previous;
}

const restoreTimeout = (client: Queryable, previous: string) => client.query(`SELECT set_config('statement_timeout', $1, true)`, [previous]);

const SAVEPOINT = 'leasehold_expire_hook';

export interface HookedBatch {
  /** Expired, hook called, ready to commit. */
  expired: ExpiredHold[];
  /** What the whole batch's statement read of the outlook (options.whole), when that batch is what commits. */
  outlook?: DueOutlook;
  /** Left held: their hook call failed by itself (or in a group the budget left unsplit). */
  failed: FailedHold[];
}

/**
 * One expiry batch with the hook, on `client` inside its transaction (just
 * begun by withTransaction): `expire(only)` runs the expiry statement (only
 * those ids, or any due hold for null). The whole batch is tried first
 * without a savepoint, the usual case costing only its statements and the
 * commit; if the hook fails, the transaction is rolled back and begun
 * again, and the batch is bisected under savepoints. Bisecting stops after
 * `budgetMs`: a group still failing then is left held as a whole, each with
 * the group's error, and retried after its back-off like a hold that failed
 * alone. `options.whole` runs the whole batch's statement instead of
 * `expire(null)` (the expiry lane's reads the outlook it sleeps on in the
 * same statement).
 */
export async function expireWithHook(
  client: pg.PoolClient,
  schema: string,
  hook: HookSettings,
  expire: (only: readonly string[] | null) => Promise<ExpiredHold[]>,
  options: { budgetMs?: number; whole?: () => Promise<{ expired: ExpiredHold[]; outlook: DueOutlook | null }> } = {},
): Promise<HookedBatch> {
  const budgetMs = options.budgetMs ?? DEFAULTS.expireHookBisectBudgetMs;
  const attempt = async (only: readonly string[]): Promise<{ rows: ExpiredHold[]; previous?: string; failure?: HookCallFailure }> => {
    await client.query(`SAVEPOINT ${SAVEPOINT}`);
    const rows = await expire(only);
    if (rows.length === 0) {
      await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      return { rows };
    }
    try {
      const previous = await callHook(client, schema, hook, rows.map(infoOf));
      await client.query(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      return { rows, previous };
    } catch (error) {
      // A lost connection is the lane's failure, not the hook's: the batch fails as a whole and is retried.
      if (isConnectionError(error)) throw error;
      // ROLLBACK TO keeps the savepoint; release it, so bisecting does not pile up subtransactions.
      await client.query(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`);
      return { rows, failure: describeFailure(error) };
    }
  };

  const { expired: whole, outlook } = options.whole ? await options.whole() : { expired: await expire(null), outlook: null };
  const read = outlook ? { outlook } : {};
  if (whole.length === 0) return { expired: [], failed: [], ...read };
  let wholeFailure: HookCallFailure;
  try {
    await callHook(client, schema, hook, whole.map(infoOf));
    // The commit follows at once: the hook's statement_timeout ends with it.
    return { expired: whole, failed: [], ...read };
  } catch (error) {
    if (isConnectionError(error)) throw error;
    wholeFailure = describeFailure(error);
  }
  // Nothing else happened in this transaction: start it again and find the holds at fault.
  await restartTransaction(client);

  const expired: ExpiredHold[] = [];
  const failed: FailedHold[] = [];
  const deadline = performance.now() + budgetMs;
  const isolate = async (ids: readonly string[], failure: HookCallFailure): Promise<void> => {
    if (ids.length === 1) {
      failed.push({ holdId: ids[0]!, ...failure });
      return;
    }
    if (performance.now() > deadline) {
      const note = ` (not isolated: the hook failed for a group of ${ids.length} holds and bisecting ran out of its ${budgetMs} ms)`;
      for (const holdId of ids) failed.push({ holdId, ...failure, error: failure.error + note });
      return;
    }
    const mid = Math.ceil(ids.length / 2);
    for (const half of [ids.slice(0, mid), ids.slice(mid)]) {
      const run = await attempt(half);
      if (run.failure) {
        // Only the holds still due and free now (another worker may have taken some meanwhile).
        await isolate(run.rows.map((r) => r.id), run.failure);
      } else {
        expired.push(...run.rows);
        // More statements follow in this transaction: they run without the hook's timeout.
        if (run.previous !== undefined) await restoreTimeout(client, run.previous);
      }
    }
  };
  await isolate(
    whole.map((r) => r.id),
    wholeFailure,
  );
  return { expired, failed };
}

/**
 * A change made through leasehold's API (confirm, cancel, extend) with the
 * hook: the change and the hook call in one transaction on `pool`, the
 * hook told the hold's id. The hook failing fails the change (nothing
 * commits) with ExpireHookError (409 `hook_failed`, the database's message).
 * Without a hook, the change alone, as before.
 */
export async function withExpireHook<T extends { id: string; expiresAt: Date; expiredAt: Date | null }>(
  pool: pg.Pool,
  schema: string,
  hook: HookSettings | undefined,
  change: (db: Queryable) => Promise<T>,
): Promise<T> {
  if (!hook) return change(pool);
  return withTransaction(pool, async (client) => {
    const hold = await change(client);
    try {
      await callHook(client, schema, hook, [{ id: hold.id, intentId: null, expiresAt: hold.expiresAt, expiredAt: hold.expiredAt ?? hold.expiresAt }]);
    } catch (error) {
      if (isConnectionError(error)) throw error;
      const failure = describeFailure(error);
      throw new ExpireHookError(hold.id, hook.name, failure.code, failure.error, failure.timedOut);
    }
    return hold;
  });
}
