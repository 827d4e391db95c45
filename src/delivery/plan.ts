import type { Clock } from '../runtime/clock.js';
import type pg from 'pg';
import type { Metrics } from '../observability/metrics.js';
import type { EmailGateway } from '../providers/gateway.js';
import type { Templates } from '../templates/templates.js';
import type { AttemptResult } from '../tables/outbox.js';
import type { QuotaUnit } from '../model/accounts.js';
import { rateLimiterRefund, rateLimiterTake } from '../tables/rate-limiter.js';
import { suppressionsAdd } from '../tables/suppressions.js';
import { tenantSendersGet } from '../tables/tenants.js';
import type { LeasedOnAccount, RequestPermits } from './legs.js';
import { prepareMessages, templateFailure, type PreparedMessage } from './messages.js';
import { membersOf, planRequests, type SendRequest } from './requests.js';
import { suppressedAttempt, suppressedIntents } from './suppression-gate.js';

/** An account as a round plans for it. */
export interface PlanAccount {
  name: string;
  gateway: EmailGateway;
  /** Sender for templates that name none. */
  from: string;
  /** Emails per provider request (1: no batches). */
  batch: number;
  unit: QuotaUnit;
  dailyQuota?: number;
}

export interface PlanSetting {
  pool: pg.Pool;
  schema: string;
  templates: Templates;
  /** In failover order. */
  accounts: readonly PlanAccount[];
  metrics?: Metrics;
  /** The render moment (what a reminder says is left); default the machine's clock. */
  clock?: Clock;
}

/** One request a round sends, with its account. */
export interface Planned {
  request: SendRequest;
  account: PlanAccount;
}

/**
 * The step of a delivery round between its lease and its sends (worker.ts):
 * reject suppressed recipients without calling the provider, render each
 * intent's message at its first lease (stored: every attempt sends the same
 * bytes), plan each account's intents into requests (requests.ts: batches
 * where its provider has them), and settle the permits of accounts whose
 * permit is a request. After the record: suppress addresses the provider
 * called inactive.
 */
export class RoundPlan {
  constructor(
    private readonly setting: PlanSetting,
    private readonly token: string,
  ) {}

  /** The results known without a send (suppressed, unrenderable), the requests to send, and the messages they carry. */
  async prepare(
    leased: LeasedOnAccount[],
    requestPermits: RequestPermits[],
  ): Promise<{ results: AttemptResult[]; planned: Planned[]; messages: Map<string, PreparedMessage> }> {
    const { pool, schema, templates, accounts } = this.setting;
    const suppressed = await this.suppressed(leased, requestPermits);
    const results: AttemptResult[] = [];
    for (const l of leased) {
      const suppression = suppressed.get(l.intent.id);
      if (suppression) results.push({ ...suppressedAttempt(l.intent, this.token, suppression), account: l.account });
    }
    const planned: Planned[] = [];
    const messages = new Map<string, PreparedMessage>();
    // Tenants' own senders, for the messages rendered now (one read, and only when something renders).
    const unrendered = leased.filter((l) => l.intent.message === null);
    const senders = unrendered.length > 0 ? await tenantSendersGet(pool, schema, [...new Set(unrendered.map((l) => l.intent.tenant))]) : new Map();
    for (const account of accounts) {
      const mine = leased.filter((l) => l.account === account.name && !suppressed.has(l.intent.id)).map((l) => l.intent);
      if (mine.length === 0) continue;
      // Each account's sender fills in templates that name none.
      for (const [id, m] of await prepareMessages(pool, schema, templates, mine, { from: account.from, senders, now: this.setting.clock?.now() ?? new Date() })) messages.set(id, m);
      const sendable = mine.filter((intent) => {
        const prepared = messages.get(intent.id)!;
        if (!prepared.ok) results.push({ ...templateFailure(intent, this.token, prepared.error), account: account.name });
        return prepared.ok;
      });
      const shape = { batch: account.batch, keyed: account.gateway.batchIdempotent === true };
      for (const request of planRequests(sendable, shape)) planned.push({ request, account });
    }
    return { results, planned, messages };
  }

  /**
   * On a `requests` account sending batches a permit is a request, known
   * only now: give back the permits the planned requests do not need, or
   * take the few more that singles sent beside the batches need. Returns
   * the requests that are paid for; one that got no permit is not sent.
   */
  async settleRequestPermits(planned: Planned[], takes: RequestPermits[]): Promise<Planned[]> {
    const { pool, schema, accounts } = this.setting;
    const unpaid = new Set<Planned>();
    for (const take of takes) {
      const mine = planned.filter((p) => p.account.name === take.account);
      const spare = take.granted - mine.length;
      const emailsUsed = mine.reduce((n, p) => n + membersOf(p.request).length, 0);
      const emailsSpare = take.granted * take.perPermit - emailsUsed;
      if (spare > 0 || emailsSpare > 0) {
        await rateLimiterRefund(pool, schema, Math.max(0, spare), take.bucketTime, take.account, Math.max(0, emailsSpare));
      }
      if (spare < 0) {
        const quota = accounts.find((a) => a.name === take.account)?.dailyQuota;
        const more = await rateLimiterTake(pool, schema, -spare, null, take.account, quota, take.perPermit);
        for (const p of mine.slice(mine.length - (-spare - more.granted))) unpaid.add(p);
      }
    }
    return planned.filter((p) => !unpaid.has(p));
  }

  /** Addresses a provider answered are inactive (Postmark 406) join the suppression list: no account sends to them again. */
  async suppressInactive(results: AttemptResult[], leased: LeasedOnAccount[]): Promise<void> {
    const inactive = results.filter((r) => r.suppressRecipient);
    if (inactive.length === 0) return;
    const byId = new Map(leased.map((l) => [l.intent.id, l]));
    const providerOf = new Map(this.setting.accounts.map((a) => [a.name, a.gateway.name]));
    const entries = inactive.map((r) => ({
      address: byId.get(r.id)!.intent.recipient,
      reason: 'hard_bounce' as const,
      detail: r.error,
      provider: providerOf.get(byId.get(r.id)!.account) ?? null,
    }));
    const added = await suppressionsAdd(this.setting.pool, this.setting.schema, entries);
    if (added.length > 0) this.setting.metrics?.suppressionsAdded.inc({ reason: 'hard_bounce' }, added.length);
  }

  /** The leased intents whose recipient is suppressed, with their permits given back (where a permit is an email). */
  private async suppressed(leased: LeasedOnAccount[], requestPermits: RequestPermits[]) {
    const { pool, schema, metrics } = this.setting;
    const suppressed = await suppressedIntents(pool, schema, leased.map((l) => l.intent));
    if (suppressed.size === 0) return suppressed;
    const refunds = new Map<string, { n: number; bucketTime: string }>();
    // Where a permit is a request, settleRequestPermits gives back what the requests did not use.
    const perRequest = new Set(requestPermits.map((t) => t.account));
    for (const l of leased) {
      if (!suppressed.has(l.intent.id) || perRequest.has(l.account)) continue;
      const r = refunds.get(l.account) ?? { n: 0, bucketTime: l.bucketTime };
      r.n += 1;
      refunds.set(l.account, r);
    }
    for (const [account, r] of refunds) await rateLimiterRefund(pool, schema, r.n, r.bucketTime, account);
    metrics?.suppressedSends.inc(suppressed.size);
    return suppressed;
  }
}
