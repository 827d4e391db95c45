import type { Clock } from '../runtime/clock.js';
import type pg from 'pg';
import type { Metrics } from '../observability/metrics.js';
import type { Templates } from '../templates/templates.js';
import type { AttemptResult, LeasedIntent } from '../tables/outbox.js';
import type { SendingAccount } from './accounts.js';
import type { RoundLease } from './legs.js';
import { prepareMessages, templateFailure, type PreparedMessage } from './messages.js';
import { withoutUnsent, type SendRequest } from './requests.js';
import { suppressedAttempt, suppressedIntents } from './suppression-gate.js';

export interface PrepareSetting {
  pool: pg.Pool;
  schema: string;
  templates: Templates;
  metrics?: Metrics;
  /** The render moment (what a reminder says is left); default the machine's clock. */
  clock?: Clock;
}

/** A round ready to send. */
export interface PreparedRound {
  /** Results known without a send: suppressed recipients, messages that could not be rendered. */
  results: AttemptResult[];
  /** Per account the round leased on, the requests to send (none: everything it leased ended here). */
  sends: Array<{ account: SendingAccount; requests: SendRequest[] }>;
  /** The message of every intent that is sent, by intent id. */
  messages: Map<string, PreparedMessage>;
}

/**
 * The step of a delivery round between its lease and its sends (worker.ts):
 * reject suppressed recipients without calling the provider, render each
 * intent's message at its first lease (stored: every attempt sends the same
 * bytes), and take both out of the requests planned at the lease.
 */
export async function prepareRound(setting: PrepareSetting, lease: RoundLease, token: string): Promise<PreparedRound> {
  const { pool, schema, templates, metrics } = setting;
  const leased = lease.legs.flatMap((leg) => leg.intents);
  const suppressed = await suppressedIntents(pool, schema, leased);
  const results: AttemptResult[] = [];
  if (suppressed.size > 0) {
    metrics?.suppressedSends.inc(suppressed.size);
    for (const leg of lease.legs) {
      for (const intent of leg.intents) {
        const suppression = suppressed.get(intent.id);
        if (suppression) results.push({ ...suppressedAttempt(intent, token, suppression), account: leg.account.name });
      }
    }
  }
  const messages = new Map<string, PreparedMessage>();
  const sends: PreparedRound['sends'] = [];
  const now = setting.clock?.now() ?? new Date();
  for (const { account, intents, requests } of lease.legs) {
    const mine = suppressed.size > 0 ? intents.filter((i) => !suppressed.has(i.id)) : intents;
    // Each account's sender fills in templates that name none; a tenant's own (the lease brings it) outranks both.
    const prepared = mine.length > 0 ? await prepareMessages(pool, schema, templates, mine, { from: account.from, now }) : new Map<string, PreparedMessage>();
    let failed = false;
    for (const intent of mine) {
      const message = prepared.get(intent.id)!;
      if (message.ok) messages.set(intent.id, message);
      else {
        failed = true;
        results.push({ ...templateFailure(intent, token, message.error), account: account.name });
      }
    }
    const sendable = (intent: LeasedIntent) => messages.has(intent.id);
    sends.push({ account, requests: suppressed.size > 0 || failed ? withoutUnsent(requests, sendable) : requests });
  }
  return { results, sends, messages };
}
