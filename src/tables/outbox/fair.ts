import { tenantCapsSpendSql, tenantCapsSql, tenantHasPolicySql, tenantNotPausedSql, tenantRoutedHereSql, tenantUncappedSql, tenantWeightSql } from '../tenants.js';

/**
 * The fair lease's choice of intents (migration 0022), a CTE fragment of
 * intentsLease (./lane.ts): which intents a round takes, shared among the
 * tenants with due intents. Apart from lane.ts because it is the one
 * statement part that knows about tenants.
 */

/** SQL condition: intent `o` is due at `now`, under no live lease, and not past its deadline (the sweep ends those as missed_deadline). */
export const dueUnleasedSql = (o: string, now: string): string => `${o}.state = 'pending' AND ${o}.available_at <= ${now}
          AND (${o}.lease_expires_at IS NULL OR ${o}.lease_expires_at <= ${now})
          AND (${o}.send_by IS NULL OR ${o}.send_by > ${now})`;

/**
 * The statement's clock as a scalar subquery, never joined: a bound
 * (`available_at <= NOW`) the index scan can start and stop on. Joined
 * (`FROM email_outbox o, clock`), the same bound was a join filter, and a
 * scan in available_at order read every pending intent not yet due
 * whenever fewer than its limit were due (a round's usual case): 125 ms
 * for the one-tenant lease beside 100,000 intents waiting on a retry.
 */
const NOW = '(SELECT clock.now FROM clock)';

/** An intent this lease may take: due, under no live lease, not past its deadline, in no open batch, and routed to this account ($10-$13). */
const leasable = (s: string, o: string): string => `${dueUnleasedSql(o, NOW)}
          -- A member of an open batch is leased only with its batch.
          AND ${o}.batch_id IS NULL
          AND ($11::text[] IS NULL OR coalesce(
            -- A tenant routed to a configured account sends only through it
            -- (one lookup: NULL when the tenant is not routed) ...
            ${tenantRoutedHereSql(s, `${o}.tenant`, '$12::text[]', '$10')},
            -- ... the others as their account says: routed to this account ...
            (CASE WHEN ${o}.account = ANY ($12::text[]) THEN ${o}.account ELSE $13 END) = ANY ($11::text[])
            -- ... and not held by another account that may have it already:
            -- an unknown outcome there, or a lease there that never reported.
            AND (${o}.pinned_account IS NULL OR ${o}.pinned_account = $10 OR NOT (${o}.pinned_account = ANY ($12::text[])))
            AND (${o}.lease_token IS NULL OR ${o}.account IS NULL OR ${o}.account = $10 OR NOT (${o}.account = ANY ($12::text[])))))`;

/**
 * The fair lease's choice of `limit` ($1) intents, shared among the tenants
 * with pending intents (migration 0022), in the lease statement itself so
 * it holds across every worker process:
 *
 * 1. `tenant_walk`: up to max(`limit`, MIN_TENANT_WALK) tenants that have
 *    pending intents, in tenant order from a random point ($15) and
 *    around, found by a skip scan of email_outbox_tenant_due (one index
 *    descent a tenant, however many intents each has).
 * 2. `fair`: from each tenant its oldest leasable intents, at most
 *    its weight (tenant_policies, 1 without one) times ceil(limit / the
 *    weights walked), interleaved by turn (a turn is `weight` intents) (every tenant's
 *    first, then every tenant's second, ...; equal ranks in an order drawn
 *    anew each round) and cut at `limit`: a tenant with one due email is in
 *    the next round beside one with ten thousand, and with fewer permits in
 *    a round than tenants (a low rate) each tenant is first equally often.
 * 3. `fill`: what the tenants' shares left of `limit`, oldest first over
 *    every tenant (email_outbox_available), so a round is full whenever
 *    enough is due: one tenant alone still gets the whole rate.
 *
 * With at most max(`limit`, MIN_TENANT_WALK) tenants pending, every round
 * visits all of them; with more, each round visits that many from its
 * random start (a start drawn over the characters tenants begin with, so
 * tenants whose names crowd together are reached less evenly).
 */
export const fairNextSql = (s: string): string => `tenant_walk (tenant, steps, wrapped) AS (
       -- The first tenant at or after the start, else the first below it.
       SELECT coalesce(up.t, down.t), 1, up.t IS NULL
         FROM (SELECT min(o.tenant) AS t FROM ${s}.email_outbox o WHERE o.state = 'pending' AND o.tenant >= $15::text) up,
              (SELECT min(o.tenant) AS t FROM ${s}.email_outbox o WHERE o.state = 'pending' AND o.tenant < $15::text) down
       UNION ALL
       -- The next one up; past the last, around to the first below the start; there, up to the start.
       SELECT coalesce(n.t, CASE WHEN NOT w.wrapped THEN
                (SELECT min(o.tenant) FROM ${s}.email_outbox o WHERE o.state = 'pending' AND o.tenant < $15::text) END),
              w.steps + 1, w.wrapped OR n.t IS NULL
         FROM tenant_walk w,
              LATERAL (SELECT min(o.tenant) AS t FROM ${s}.email_outbox o
                        WHERE o.state = 'pending' AND o.tenant > w.tenant AND (NOT w.wrapped OR o.tenant < $15::text)) n
        WHERE w.tenant IS NOT NULL AND w.steps < greatest($1, ${MIN_TENANT_WALK})
     ), tenants AS (
       -- A paused tenant's intents wait for its resume.
       SELECT w.tenant, ${tenantWeightSql(s, 'w.tenant')} AS weight FROM (SELECT DISTINCT tenant FROM tenant_walk WHERE tenant IS NOT NULL) w
        WHERE ${tenantNotPausedSql(s, 'w.tenant')}
     ), ${tenantCapsSql(s, 'tenants', '(SELECT clock.now FROM clock)')}, share AS (
       SELECT ceil($1::float8 / greatest(1, (SELECT sum(weight) FROM tenants)))::int AS per_weight
     ), fair_picks AS (
       -- A tenant of weight w takes w intents a turn.
       SELECT x.id, x.old_token, x.available_at, x.tenant,
              ceil(row_number() OVER (PARTITION BY x.tenant ORDER BY x.available_at) / x.weight::float8) AS turn
         FROM tenants t CROSS JOIN LATERAL (
           -- The outer LIMIT (never below the inner one: a round takes at most
           -- $1) gives the planner a row count to cost with: without it the
           -- estimate ran to hundreds of thousands, and PostgreSQL 15 spent
           -- 175 ms compiling the statement with JIT on every lease.
           SELECT * FROM (
           SELECT o.id, o.lease_token AS old_token, o.available_at, o.tenant, t.weight
             FROM ${s}.email_outbox o
            WHERE o.tenant = t.tenant AND ${leasable(s, 'o')}
            -- The tenant's order in email_outbox_tenant_due: read in index
            -- order, never sorted (with a tenant of a million intents,
            -- PostgreSQL 15 otherwise bitmap-scanned and sorted them all).
            ORDER BY o.tenant, o.available_at
            -- A capped tenant takes no more than its own bucket allows.
            LIMIT least((SELECT per_weight FROM share) * t.weight,
                        coalesce((SELECT c.permits FROM tenant_caps c WHERE c.tenant = t.tenant), 2147483647))
              FOR UPDATE OF o SKIP LOCKED) share_of_tenant
            LIMIT $1) x
     ), fair AS (
       -- Among equal turns the order is drawn anew each round (the start
       -- seeds it): with fewer permits than tenants, each is first as often.
       SELECT id, old_token FROM fair_picks ORDER BY turn, md5(tenant || $15::text), available_at LIMIT $1
     ), fill_candidates AS MATERIALIZED (
       -- The oldest leasable intents of every tenant, unlocked, a few times
       -- what the fill may need; tenant conditions apply to them after, so
       -- they cannot take this scan off its index order (the planner
       -- misjudges them with few tenants).
       SELECT o.id, o.tenant
         FROM ${s}.email_outbox o
        WHERE ${leasable(s, 'o')}
          -- Rows this statement locked already are not skipped by SKIP LOCKED: left out here.
          AND NOT (o.id = ANY (ARRAY(SELECT id FROM fair_picks)))
        ORDER BY o.available_at
        LIMIT $1 * 4
     ), fill AS (
       SELECT o.id, o.lease_token AS old_token
         FROM ${s}.email_outbox o
        WHERE o.id = ANY (ARRAY(
                SELECT c.id FROM fill_candidates c
                 -- A paused tenant waits; a capped one comes only through its share, within its bucket.
                 WHERE ${tenantNotPausedSql(s, 'c.tenant')} AND ${tenantUncappedSql(s, 'c.tenant')}))
          -- Checked again on the locked row.
          AND ${leasable(s, 'o')}
        ORDER BY o.available_at
        LIMIT (SELECT $1 - count(*) FROM fair)
          FOR UPDATE OF o SKIP LOCKED
     ), next AS (
       SELECT id, old_token FROM fair UNION ALL SELECT id, old_token FROM fill
     ), tenant_taken AS (
       SELECT fp.tenant, count(*)::int AS n FROM fair_picks fp WHERE fp.id IN (SELECT id FROM fair) GROUP BY fp.tenant
     ), tenant_spent AS (
       ${tenantCapsSpendSql(s, 'tenant_taken')}
     )`;

/**
 * The lease's choice when at most one tenant has pending email and that
 * tenant has no policy (no weight, cap, pause, route or sender): what
 * fairNextSql would take is then that tenant's oldest leasable intents,
 * which this form takes directly, without the walk, the shares and the
 * fill, whose planning was most of the lease statement's (about 1.4 of
 * 2.1 ms on PostgreSQL 15, BENCHMARKS.md). `one_tenant.holds` says
 * whether the condition held in the statement's own snapshot; when it did
 * not, `next` is empty and the caller leases again with fairNextSql, so
 * every round takes exactly what the fair lease would. `cap` (an SQL
 * integer expression) leases at most that many of the `$1` locked.
 */
export const oneTenantNextSql = (s: string, cap?: string): string => `one_tenant AS MATERIALIZED (
       SELECT lo.t IS NOT DISTINCT FROM hi.t AND NOT ${tenantHasPolicySql(s, 'lo.t')} AS holds
         FROM (SELECT min(o.tenant) AS t FROM ${s}.email_outbox o WHERE o.state = 'pending') lo,
              (SELECT max(o.tenant) AS t FROM ${s}.email_outbox o WHERE o.state = 'pending') hi
     ), ${cap === undefined ? 'next' : 'due'} AS (
       SELECT o.id, o.lease_token AS old_token, o.available_at
         FROM ${s}.email_outbox o
        WHERE (SELECT holds FROM one_tenant) AND ${leasable(s, 'o')}
        ORDER BY o.available_at
        LIMIT $1
          FOR UPDATE OF o SKIP LOCKED
     )${
       // Capped (the permits the same statement granted): the oldest of
       // those locked. The scan's own limit stays a constant, so its plan
       // is the index walk whatever the cap.
       cap === undefined ? '' : `, next AS (SELECT id, old_token FROM due ORDER BY available_at LIMIT ${cap})`
     }`;

/** Tenants a round's walk visits at least, whatever its size. */
const MIN_TENANT_WALK = 64;

/** A random starting point for the walk over tenants. */
export function randomTenantStart(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return alphabet[Math.floor(Math.random() * alphabet.length)]!;
}
