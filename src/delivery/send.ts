import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Faults } from '../runtime/faults.js';
import type { BatchMemberResult, SendResult } from '../providers/gateway.js';
import type { SendingAccount } from './accounts.js';
import type { AttemptResult, LeasedIntent } from '../tables/outbox.js';
import { batchesBegin } from '../tables/batches.js';
import type { AttemptOutcome } from '../model/intent-states.js';
import { failureDelayMs, rateLimitDelayMs, defaultRetryPolicy, type RetryPolicy } from './retry-policy.js';
import { emailMessageFor, type PreparedMessage } from './messages.js';
import { nextAccount } from './routing.js';
import { membersOf, type SendRequest } from './requests.js';
import type { PreparedRound } from './prepare.js';
import type { RoundBudget } from './budget.js';
import type { Metrics } from '../observability/metrics.js';
import { annotate, ATTR, capped, inSpan, MESSAGING_SYSTEM, outcomeOf as oneOutcome, type Attributes } from '../observability/tracing.js';

/** What sending needs of the round and the worker. */
export interface SendSetting {
  pool: pg.Pool;
  schema: string;
  token: string;
  sendTimeoutMs: number;
  /** The round's send timeout (sendTimeoutMs), one for all its requests: they start together. */
  signal: AbortSignal;
  /** Account names in failover order (a send that never left moves to the next). */
  failover: readonly string[];
  retryPolicy: RetryPolicy | undefined;
  random: () => number;
  faults: Faults;
}

/** A round's sends: every result, how many requests went back unsent, and the first request that threw (its intents stay leased). */
export interface SentRound {
  results: AttemptResult[];
  givenBack: number;
  error?: unknown;
}

/**
 * The send step of a round (delivery/worker.ts): send what is paid for,
 * concurrently; each request's slot goes back as its send ends. What is not
 * sent is given back at once, due again, instead of waiting out its lease:
 * a request past the round's slots (a batching account's singles, planned
 * beside its batches, can outnumber the slots its lease was sized by), one
 * no permit was left for, or everything once the worker is stopping (asked
 * after the permits are settled: stop() may come while they are).
 */
export async function sendPrepared(
  prepared: PreparedRound,
  budget: RoundBudget,
  round: Omit<SendSetting, 'signal'> & { stopping: () => boolean; metrics?: Metrics },
): Promise<SentRound> {
  const results: AttemptResult[] = [];
  let givenBack = 0;
  const paid = [];
  let slots = budget.heldSlots;
  for (const { account, requests } of prepared.sends) {
    const fitting = requests.slice(0, slots);
    const settled = await budget.settle(account, fitting);
    const stopping = round.stopping();
    const going = stopping ? [] : settled;
    slots -= going.length;
    for (const [i, request] of requests.entries()) {
      if (i < going.length) continue;
      const why = stopping
        ? 'given back unsent: the worker is stopping'
        : i >= fitting.length
          ? 'given back unsent: no send slot left for this request'
          : 'given back unsent: no permit left for this request';
      // An open batch given back stays bound: it still goes again only whole.
      const bound = request.kind === 'batch' && request.batchId !== undefined ? { batchId: request.batchId, keepBatch: true } : {};
      for (const intent of membersOf(request)) results.push({ ...unsentResult(intent, round.token, why, account.name), ...bound });
      givenBack += 1;
    }
    for (const request of going) paid.push({ request, account });
  }
  budget.keepSlots(paid.length);
  // The send timeout starts with the sends, not with the permits' settling before them.
  const { stopping: _stopping, metrics, ...shared } = round;
  const setting: SendSetting = { ...shared, signal: AbortSignal.timeout(round.sendTimeoutMs) };
  const sends: Array<Promise<AttemptResult[]>> = [];
  for (const { request, account } of paid) {
    metrics?.emailsPerRequest.observe({ account: account.name }, membersOf(request).length);
    sends.push(sendRequest(request, account, prepared.messages, setting).finally(() => budget.requestDone()));
  }
  // Every request's results, whatever another request did: one that threw
  // (never for the provider's sake: sendRequest turns those into results)
  // must not cost the others their record.
  let error: unknown;
  for (const sent of await Promise.allSettled(sends)) {
    if (sent.status === 'fulfilled') results.push(...sent.value);
    else error ??= sent.reason;
  }
  return error === undefined ? { results, givenBack } : { results, givenBack, error };
}

/** The key a batch is sent under, on every send of it. */
export const batchKey = (batchId: string): string => `batch-${batchId}`;

const outcomeOf: Record<SendResult['kind'], AttemptOutcome> = {
  accepted: 'accepted',
  rate_limited: 'rate_limited',
  rejected: 'rejected',
  failed: 'failed',
  paused: 'paused',
};

/**
 * Send one request of a round (delivery/requests.ts) and return one attempt
 * result per intent it carried. Never throws for the provider's sake: an
 * adapter that throws, or a timeout it did not classify, is an unknown
 * outcome.
 */
export async function sendRequest(
  request: SendRequest,
  account: SendingAccount,
  messages: ReadonlyMap<string, PreparedMessage>,
  setting: SendSetting,
): Promise<AttemptResult[]> {
  const members = membersOf(request);
  const spec = {
    kind: 'client' as const,
    lazy: () => sendSpanAttributes(account, members),
    holds: () => members.map((m) => ({ traceparent: m.holdTraceparent, holdId: m.holdId, intentId: m.id, attempt: m.attempts })),
  };
  return inSpan('send', spec, async (span) => {
    const results = request.kind === 'single' ? [await sendSingle(request.intent, account, messages, setting)] : await sendBatch(request, account, messages, setting);
    annotate(span, () => {
      const attributes: Attributes = { [ATTR.outcome]: oneOutcome(results.map((r) => r.outcome)) ?? 'none' };
      const status = oneOutcome(results.map((r) => String(r.providerStatus ?? '')));
      if (account.gateway.endpoint && status && status !== 'mixed') attributes[ATTR.httpStatus] = Number(status);
      if (results[0]?.batchId) attributes['leasehold.batch.id'] = results[0].batchId;
      return attributes;
    });
    return results;
  });
}

/** The send span's attributes: which account and provider, how many emails; HTTP's where the adapter knows its endpoint. Ids only. */
function sendSpanAttributes(account: SendingAccount, members: readonly LeasedIntent[]): Attributes {
  const attributes: Attributes = {
    [ATTR.messagingSystem]: MESSAGING_SYSTEM,
    [ATTR.messagingOperationType]: 'send',
    [ATTR.messagingDestination]: account.name,
    [ATTR.messagingBatchCount]: members.length,
    [ATTR.account]: account.name,
    [ATTR.provider]: account.provider,
    [ATTR.intentIds]: capped(members.map((m) => m.id)),
    [ATTR.holdIds]: capped(members.map((m) => m.holdId)),
  };
  if (members.length === 1) {
    attributes[ATTR.intentId] = members[0]!.id;
    attributes[ATTR.holdId] = members[0]!.holdId;
    attributes[ATTR.attempt] = members[0]!.attempts;
  }
  const endpoint = account.gateway.endpoint;
  if (endpoint) {
    attributes[ATTR.httpMethod] = endpoint.method;
    attributes[ATTR.serverAddress] = endpoint.address;
    attributes[ATTR.serverPort] = endpoint.port;
  }
  return attributes;
}

async function sendSingle(
  intent: LeasedIntent,
  account: SendingAccount,
  messages: ReadonlyMap<string, PreparedMessage>,
  setting: SendSetting,
): Promise<AttemptResult> {
  const prepared = messages.get(intent.id);
  if (!prepared?.ok) throw new Error(`intent ${JSON.stringify(intent.id)} has no message to send`);
  const started = Date.now();
  let result: SendResult;
  try {
    result = await account.gateway.send(emailMessageFor(intent, prepared.message), {
      attempt: intent.attempts,
      previousOutcomeUnknown: intent.previousOutcomeUnknown,
      signal: setting.signal,
    });
  } catch (error) {
    result = thrown(error);
  }
  if (result.kind === 'accepted') await setting.faults.at('delivery.accepted', { intentId: intent.id, receipt: result.receipt });
  const delayMs = delayFor(result, intent.failedAttempts, setting);
  return attemptResult(intent, result, account, setting, { started, delayMs, sameKeyAsBefore: account.gateway.idempotent });
}

/**
 * One batch: a new one is recorded first (its members, in order, and for a
 * keyed provider bound to it: tables/batches.ts), so a resend after a
 * crash carries the same key and the same members in the same order. An
 * open batch leased whole goes again under its own id.
 */
async function sendBatch(
  request: Extract<SendRequest, { kind: 'batch' }>,
  account: SendingAccount,
  messages: ReadonlyMap<string, PreparedMessage>,
  setting: SendSetting,
): Promise<AttemptResult[]> {
  const { gateway, keyed } = account;
  let batchId = request.batchId;
  let members = request.members;
  if (batchId === undefined) {
    batchId = randomUUID();
    let joined: string[];
    try {
      joined = await batchesBegin(setting.pool, setting.schema, {
        id: batchId,
        account: account.name,
        provider: account.provider,
        members: members.map((m) => m.id),
        token: setting.token,
        bind: keyed,
      });
    } catch (error) {
      // Not begun, so not sent: a failed attempt that surely never reached
      // the provider, backing off (and dead after maxAttempts) like any
      // failure, while the round records what its other requests settled.
      const started = Date.now();
      const result: SendResult = { kind: 'failed', reason: `the batch could not be recorded: ${(error as Error)?.message ?? String(error)}`, outcomeUnknown: false };
      return members.map((intent) =>
        attemptResult(intent, result, account, setting, { started, delayMs: delayFor(result, intent.failedAttempts, setting), sameKeyAsBefore: false }),
      );
    }
    // A member whose lease was lost meanwhile (reclaimed) is not ours to send.
    const byId = new Map(members.map((m) => [m.id, m]));
    members = joined.map((id) => byId.get(id)!);
    if (members.length === 0) return [];
  }
  await setting.faults.at('delivery.batch', { batchId, members: members.map((m) => m.id) });
  const started = Date.now();
  let results: BatchMemberResult[];
  let keyUnusable = false;
  try {
    const answer = await gateway.sendBatch!(
      members.map((intent) => {
        const prepared = messages.get(intent.id);
        if (!prepared?.ok) throw new Error(`intent ${JSON.stringify(intent.id)} has no message to send`);
        return { message: emailMessageFor(intent, prepared.message), attempt: intent.attempts, previousOutcomeUnknown: intent.previousOutcomeUnknown };
      }),
      { batchId, idempotencyKey: batchKey(batchId), signal: setting.signal },
    );
    if (answer.results.length !== members.length) {
      throw new Error(`the adapter answered ${answer.results.length} results for a batch of ${members.length}`);
    }
    results = answer.results;
    keyUnusable = answer.keyUnusable === true;
  } catch (error) {
    results = members.map(() => thrown(error));
  }
  for (const [i, r] of results.entries()) {
    if (r.kind === 'accepted') await setting.faults.at('delivery.accepted', { intentId: members[i]!.id, receipt: r.receipt });
  }
  // Refused whole, with no member named: each goes alone from now on, so
  // only the one at fault is refused (Resend's strict validation names none).
  const noCulprit = results.every((r) => r.kind === 'unsent');
  // Members bound to the batch wait together: one delay for all, from the longest back-off among them.
  const mostFailed = Math.max(...members.map((m) => m.failedAttempts));
  const sharedDelay = new Map<string, number>();
  return members.map((intent, i) => {
    const result = results[i]!;
    const base = { batchId, ...(keyUnusable ? { keyUnusable: true } : {}) };
    if (result.kind === 'unsent') {
      // Refused for another member's fault: given back, due at once, to go in a new batch.
      const { providerStatus, providerCode } = reported(result);
      return {
        ...unsentResult(intent, setting.token, String(result.reason), account.name, started),
        ...base,
        ...(noCulprit ? { sendAlone: true } : {}),
        providerStatus,
        providerCode,
      };
    }
    // A keyed batch binds its members while its outcome is unknown: after a
    // first send that may have delivered, and on every resend until one
    // settles it (a 429 or a pause on a resend leaves the first one unknown).
    const settled = result.kind === 'accepted' || result.kind === 'rejected';
    const keep = keyed && !keyUnusable && !settled && ((result.kind === 'failed' && result.outcomeUnknown) || request.batchId !== undefined);
    let delayMs: number;
    if (keep || result.kind === 'rate_limited') {
      if (!sharedDelay.has(result.kind)) sharedDelay.set(result.kind, delayFor(result, mostFailed, setting));
      delayMs = sharedDelay.get(result.kind)!;
    } else {
      delayMs = delayFor(result, intent.failedAttempts, setting);
    }
    return {
      ...attemptResult(intent, result, account, setting, {
        started,
        delayMs,
        // Only a resend of this very batch under its key can be deduplicated.
        sameKeyAsBefore: keyed && request.batchId !== undefined && !keyUnusable,
      }),
      ...base,
      ...(keep ? { keepBatch: true } : {}),
    };
  });
}

/** The result for an intent given back unsent (a refused batch, or a round cut short by stop()). */
export function unsentResult(intent: LeasedIntent, token: string, reason: string, account: string, started = Date.now()): AttemptResult {
  return {
    id: intent.id,
    token,
    attempt: intent.attempts,
    outcome: 'abandoned',
    receipt: null,
    error: reason.slice(0, 1000),
    delayMs: 0,
    providerStatus: null,
    providerCode: null,
    outcomeUnknown: false,
    durationMs: Date.now() - started,
    duplicateRisk: false,
    account,
  };
}

/**
 * What an adapter reported beside its outcome, as the record's columns hold
 * it. An application's own gateway written in JavaScript may answer looser
 * types than SendResult declares (a numeric receipt, a status as text): the
 * record sends its columns as typed binary arrays (db/binary-arrays.ts),
 * which refuse them, and a record that fails for a value the provider gave
 * would fail on every attempt and resend the email each time its lease
 * ran out. So they are made text and integers here, once, and a status
 * that is no whole number is left out.
 */
function reported(result: { receipt?: unknown; reason?: unknown; providerStatus?: unknown; providerCode?: unknown }): {
  receipt: string | null;
  error: string | null;
  providerStatus: number | null;
  providerCode: string | null;
} {
  const status = typeof result.providerStatus === 'string' ? Number(result.providerStatus) : result.providerStatus;
  const text = (value: unknown) => (value === undefined || value === null ? null : String(value));
  return {
    receipt: text(result.receipt),
    error: text(result.reason)?.slice(0, 1000) ?? null,
    providerStatus: typeof status === 'number' && Number.isInteger(status) && status >= 0 && status <= 2_147_483_647 ? status : null,
    providerCode: text(result.providerCode),
  };
}

function thrown(error: unknown): SendResult {
  return { kind: 'failed', reason: `send threw: ${(error as Error)?.message ?? String(error)}`, outcomeUnknown: true };
}

function delayFor(result: SendResult, failedAttempts: number, setting: SendSetting): number {
  if (result.kind === 'rate_limited') return rateLimitDelayMs(result.retryAfterMs, setting.random);
  if (result.kind === 'failed') return failureDelayMs(failedAttempts, setting.retryPolicy ?? defaultRetryPolicy, setting.random);
  return 0;
}

function attemptResult(
  intent: LeasedIntent,
  result: SendResult,
  account: SendingAccount,
  setting: SendSetting,
  how: { started: number; delayMs: number; /** This send carried the key an earlier unknown attempt went under, to a provider that deduplicates on it. */ sameKeyAsBefore: boolean },
): AttemptResult {
  // A send that never left moves the intent on to the next account, due at
  // once there, unless an unknown outcome holds it to this one.
  const next = result.kind === 'failed' && result.neverSent && !intent.previousOutcomeUnknown ? nextAccount(setting.failover, account.name) : undefined;
  const moveTo = next !== undefined && next !== account.name ? next : undefined;
  // Accepted after an earlier attempt whose outcome is unknown: a
  // duplicate is possible unless this send carried the key that earlier
  // attempt went under, through that same account.
  const elsewhere = intent.movedUnsettled || (intent.pinnedAccount !== null && intent.pinnedAccount !== account.name);
  const said = reported(result);
  return {
    id: intent.id,
    token: setting.token,
    attempt: intent.attempts,
    outcome: outcomeOf[result.kind],
    // An acceptance without a receipt (a gateway that broke its contract) is
    // still an acceptance: recorded under a receipt naming the attempt, never
    // refused by the table's check and so sent again at each lease expiry.
    ...(result.kind === 'accepted' ? { ...said, receipt: said.receipt ?? `no-receipt:${intent.id}:${intent.attempts}`, error: null } : { ...said, receipt: null }),
    delayMs: moveTo !== undefined ? 0 : how.delayMs,
    outcomeUnknown: result.kind === 'failed' && result.outcomeUnknown,
    durationMs: Date.now() - how.started,
    duplicateRisk: result.kind === 'accepted' && !result.reconciled && intent.previousOutcomeUnknown && (!how.sameKeyAsBefore || elsewhere),
    account: account.name,
    ...(result.kind === 'rejected' && result.suppress ? { suppressRecipient: true } : {}),
    ...(moveTo !== undefined ? { moveTo } : {}),
    ...(result.kind === 'rate_limited' ? { providerWaitMs: result.retryAfterMs } : {}),
    ...(result.kind === 'paused' && result.resumeAfterMs !== undefined ? { providerWaitMs: result.resumeAfterMs } : {}),
  };
}
