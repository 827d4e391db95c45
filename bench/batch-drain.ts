import { ident } from '../src/db/pool.js';
import { DeliveryWorker } from '../src/delivery/worker.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import type { QuotaUnit } from '../src/model/accounts.js';
import type { RateLimitPolicy } from '../src/model/delivery-policy.js';
import { silentLogger } from '../src/observability/logger.js';
import type { EmailGateway } from '../src/providers/gateway.js';
import { PostmarkGateway } from '../src/providers/postmark.js';
import { ResendGateway } from '../src/providers/resend.js';
import { SmtpGateway } from '../src/providers/smtp.js';
import type { JsonReply, RecordedRequest } from '../test/helpers/fake-http.js';
import { FakePostmark } from '../test/helpers/fake-postmark.js';
import { FakeResend } from '../test/helpers/fake-resend.js';
import { FakeSmtp } from '../test/helpers/fake-smtp.js';
import type { Benchmark, BenchResult, Figure } from './common.js';
import { round, sleep } from './common.js';
import type { BenchDatabase } from './database.js';
import { seedHolds } from './seed.js';

/**
 * How long a backlog of emails due at once takes to drain through each
 * local stand-in (test/helpers), with and without batch sending: one
 * DeliveryWorker in this process (start(), the default round size and
 * concurrency, one account), after the expiry lane turned DUE seeded holds
 * into pending intents. Timed from start() to the last intent's sent_at.
 *
 *  - Resend stand-in enforcing 2 requests/s per team (one-second windows),
 *    the account's limiter at 2/s burst 2, unit `requests` (Resend's limit
 *    as a user would copy it, and as the README's example has it): batch
 *    100; the same at 1.9/s burst 1 (a margin under the provider's limit);
 *    and batch 1 on a smaller backlog (RESEND_SINGLE), its time for DUE
 *    extrapolated from the measured pace;
 *  - Postmark stand-in (no limit), limiter 10 requests/s burst 10 (the
 *    default): batch 500, and batch 1 on POSTMARK_SINGLE, extrapolated;
 *  - SMTP (smtp-server), the pooled nodemailer transport (5 connections),
 *    limiter 100,000/s (never the bound): no batch API, SMTP_EMAILS emails.
 *
 * Every stand-in counts its deliveries per X-Leasehold-Intent-Id: each
 * intent must be delivered exactly once. The HTTP stand-ins also keep the
 * arrival and status of every request (429: the provider's limit was
 * exceeded), in the details of bench/results/latest.json.
 */
const DUE = Number(process.env.BENCH_BATCH_DRAIN_EMAILS ?? 5000);
const RESEND_SINGLE = Number(process.env.BENCH_BATCH_DRAIN_RESEND_SINGLE ?? 100);
const POSTMARK_SINGLE = Number(process.env.BENCH_BATCH_DRAIN_POSTMARK_SINGLE ?? 300);
const SMTP_EMAILS = Number(process.env.BENCH_BATCH_DRAIN_SMTP ?? DUE);
/** A drain that takes longer than this is a failure, not a figure. */
const DEADLINE_MS = 240_000;

const INTENT_HEADER = 'x-leasehold-intent-id';

/** One answer of an HTTP stand-in: when the request arrived (epoch ms), and its status. */
interface Answer {
  at: number;
  status: number;
}

/** The Resend stand-in, keeping the status of every answer. */
class CountingResend extends FakeResend {
  readonly answers: Answer[] = [];
  protected override async respond(request: RecordedRequest): Promise<JsonReply> {
    const at = Date.now();
    const reply = await super.respond(request);
    this.answers.push({ at, status: reply.status });
    return reply;
  }
}

class CountingPostmark extends FakePostmark {
  readonly answers: Answer[] = [];
  protected override respond(request: RecordedRequest): JsonReply {
    const at = Date.now();
    const reply = super.respond(request);
    this.answers.push({ at, status: reply.status });
    return reply;
  }
}

const byStatus = (answers: Answer[]) => Object.fromEntries(count(answers.map((a) => String(a.status))));

/** One stand-in as a drain reads it afterwards. */
interface StandIn {
  gateway: EmailGateway;
  /** The intent id of every email it delivered, one entry per delivery. */
  delivered(): string[];
  /** Requests received per path. */
  requests(): Record<string, number>;
  /** Every answer (HTTP stand-ins). */
  answers?(): Answer[];
  /** Connections the server saw (SMTP). */
  connections?(): { opened: number; peakOpen: number };
}

interface Drain {
  label: string;
  emails: number;
  batch: number;
  unit: QuotaUnit;
  rate: RateLimitPolicy;
  /** start() -> the last intent's sent_at. */
  seconds: number;
  perSecond: number;
  sent: number;
  /** Intents delivered more than once by the stand-in (extra deliveries). */
  duplicates: number;
  /** Intents the stand-in never delivered. */
  missing: number;
  possibleDuplicates: number;
  /** Attempts by outcome (one per member of a batch). */
  attempts: Record<string, number>;
  requests: Record<string, number>;
  statuses?: Record<string, number>;
  /** Each request's arrival (s after start()) and status, in order (HTTP stand-ins). */
  answers?: Array<[number, number]>;
  connections?: { opened: number; peakOpen: number };
  /** Batches recorded (email_batches rows). */
  batches: number;
  /** For the drains on a smaller backlog: DUE at the measured steady rate. */
  extrapolatedSeconds?: number;
}

const count = (values: string[]) => {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
};

async function drain(
  db: BenchDatabase,
  label: string,
  emails: number,
  standIn: StandIn,
  account: { batch: number; unit: QuotaUnit; rate: RateLimitPolicy },
): Promise<Drain> {
  const target = await db.freshSchema('batch_drain');
  const s = ident(target.schema);
  try {
    // Due a minute ago, all at once; the expiry lane turns them into pending intents.
    await seedHolds(target.pool, target.schema, emails, { firstDueMs: -60_000, spacingMs: 0 });
    const expiry = new ExpiryWorker({ pool: target.pool, schema: target.schema, logger: silentLogger });
    while ((await expiry.runOnce()).full);
    const pending = await target.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'pending'`);
    if (pending.rows[0]!.n !== emails) throw new Error(`${label}: the expiry lane made ${pending.rows[0]!.n} intents, expected ${emails}`);
    await target.pool.query(`VACUUM ANALYZE ${s}.email_outbox`);
    await target.pool.query('CHECKPOINT').catch(() => {});

    const worker = new DeliveryWorker({
      pool: target.pool,
      schema: target.schema,
      accounts: [{ name: label, gateway: standIn.gateway, batch: account.batch, unit: account.unit }],
      // Written by the first round (a full bucket): the limiter as a fresh deployment starts.
      initialRate: account.rate,
      logger: silentLogger,
    });
    const started = Date.now();
    worker.start();
    try {
      for (;;) {
        const { rows } = await target.pool.query<{ left: number }>(
          `SELECT count(*)::int AS left FROM ${s}.email_outbox WHERE state = 'pending'`,
        );
        if (rows[0]!.left === 0) break;
        if (Date.now() - started > DEADLINE_MS) throw new Error(`${label}: ${rows[0]!.left} of ${emails} intents still pending after ${DEADLINE_MS / 1000} s`);
        await sleep(100);
      }
    } finally {
      await worker.stop();
      await standIn.gateway.close?.();
    }

    const { rows } = await target.pool.query<{ sent: number; last: Date; flagged: number }>(
      `SELECT count(*) FILTER (WHERE state = 'sent')::int AS sent, max(sent_at) AS last,
              count(*) FILTER (WHERE possible_duplicate)::int AS flagged
         FROM ${s}.email_outbox`,
    );
    const outcomes = await target.pool.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM ${s}.email_attempts GROUP BY outcome ORDER BY outcome`,
    );
    const batches = await target.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_batches`);
    const ids = await target.pool.query<{ id: string }>(`SELECT id FROM ${s}.email_outbox`);
    const row = rows[0]!;
    const delivered = count(standIn.delivered());
    const duplicates = [...delivered.values()].reduce((n, c) => n + c - 1, 0);
    const missing = ids.rows.filter((r) => !delivered.has(r.id)).length;
    const seconds = (row.last.getTime() - started) / 1000;
    return {
      label,
      emails,
      batch: account.batch,
      unit: account.unit,
      rate: account.rate,
      seconds: round(seconds, 2),
      perSecond: round(row.sent / seconds, 1),
      sent: row.sent,
      duplicates,
      missing,
      possibleDuplicates: row.flagged,
      attempts: Object.fromEntries(outcomes.rows.map((r) => [r.outcome, r.n])),
      requests: standIn.requests(),
      ...(standIn.answers
        ? {
            statuses: byStatus(standIn.answers()),
            answers: standIn.answers().map((a): [number, number] => [round((a.at - started) / 1000, 3), a.status]),
          }
        : {}),
      ...(standIn.connections ? { connections: standIn.connections() } : {}),
      batches: batches.rows[0]!.n,
    };
  } finally {
    await target.drop();
  }
}

/**
 * DUE at the rate measured on a smaller backlog: the first `burst` permits
 * are granted at once, the rest at the limiter's pace, so the pace is
 * (n - burst) / seconds and DUE takes (DUE - burst) / pace.
 */
function extrapolate(d: Drain): Drain {
  const pace = (d.sent - d.rate.burst) / d.seconds;
  return { ...d, extrapolatedSeconds: round((DUE - d.rate.burst) / pace, 0) };
}

async function withResend(run: (standIn: StandIn) => Promise<Drain>): Promise<Drain> {
  const fake = new CountingResend({ requestsPerSecond: 2 });
  await fake.start();
  try {
    return await run(
      {
        gateway: new ResendGateway({ apiKey: fake.apiKey, baseUrl: fake.url }),
        delivered: () => fake.deliveries.map((d) => d.headers['X-Leasehold-Intent-Id'] ?? ''),
        requests: () => fake.requestCounts(),
        answers: () => fake.answers,
      },
    );
  } finally {
    await fake.stop();
  }
}

async function withPostmark(run: (standIn: StandIn) => Promise<Drain>): Promise<Drain> {
  const fake = new CountingPostmark();
  await fake.start();
  try {
    return await run({
      gateway: new PostmarkGateway({ serverToken: fake.serverToken, baseUrl: fake.url }),
      delivered: () => fake.outbound.map((m) => m.Headers.find((h) => h.Name.toLowerCase() === INTENT_HEADER)?.Value ?? ''),
      requests: () => {
        const counts: Record<string, number> = {};
        for (const r of fake.requests) counts[r.path] = (counts[r.path] ?? 0) + 1;
        return counts;
      },
      answers: () => fake.answers,
    });
  } finally {
    await fake.stop();
  }
}

async function withSmtp(run: (standIn: StandIn) => Promise<Drain>): Promise<Drain> {
  const fake = new FakeSmtp();
  await fake.start();
  try {
    return await run({
      gateway: new SmtpGateway({ url: fake.url }),
      delivered: () => fake.received.map((m) => m.headers[INTENT_HEADER] ?? ''),
      requests: () => ({ messages: fake.received.length }),
      connections: () => ({ opened: fake.opened, peakOpen: fake.peakOpen }),
    });
  } finally {
    await fake.stop();
  }
}

const RESEND_RATE: RateLimitPolicy = { perSecond: 2, burst: 2 };
/** Just under the stand-in's 2 requests/s, no burst beyond one: the setting that gets no 429 (see BENCHMARKS.md). */
const RESEND_HEADROOM: RateLimitPolicy = { perSecond: 1.9, burst: 1 };
const POSTMARK_RATE: RateLimitPolicy = { perSecond: 10, burst: 10 };
/** Far above what the pool carries (at 1,000/s the limiter itself was the bound on PostgreSQL 15). */
const SMTP_RATE: RateLimitPolicy = { perSecond: 100_000, burst: 100_000 };

const tooMany = (d: Drain) => d.statuses?.['429'] ?? 0;
const otherThanOnce = (d: Drain) => d.duplicates + d.missing;

export const batchDrain: Benchmark = {
  name: 'batch-drain',
  description: `${DUE} emails due at once: Resend (2 req/s) and Postmark stand-ins with and without batches, SMTP pooled`,
  optIn: true,
  async run(db): Promise<BenchResult> {
    const requests = 'requests' as const;
    const resendBatched = await withResend((standIn) => drain(db, 'resend', DUE, standIn, { batch: 100, unit: requests, rate: RESEND_RATE }));
    const resendHeadroom = await withResend((standIn) => drain(db, 'resend', DUE, standIn, { batch: 100, unit: requests, rate: RESEND_HEADROOM }));
    const resendSingle = extrapolate(
      await withResend((standIn) => drain(db, 'resend', RESEND_SINGLE, standIn, { batch: 1, unit: requests, rate: RESEND_RATE })),
    );
    const postmarkBatched = await withPostmark((standIn) => drain(db, 'postmark', DUE, standIn, { batch: 500, unit: requests, rate: POSTMARK_RATE }));
    const postmarkSingle = extrapolate(
      await withPostmark((standIn) => drain(db, 'postmark', POSTMARK_SINGLE, standIn, { batch: 1, unit: requests, rate: POSTMARK_RATE })),
    );
    const smtp = await withSmtp((standIn) => drain(db, 'smtp', SMTP_EMAILS, standIn, { batch: 1, unit: requests, rate: SMTP_RATE }));

    const drains = [resendBatched, resendHeadroom, resendSingle, postmarkBatched, postmarkSingle, smtp];
    const extrapolated = (n: number) => `${DUE} would take (EXTRAPOLATED from ${n})`;
    const figures: Figure[] = [
      { name: `Resend batch 100, 2/s burst 2: ${DUE} drained in`, value: resendBatched.seconds, unit: 's', target: '<= 30' },
      { name: 'Resend batch 100, 2/s burst 2: intents delivered other than once', value: otherThanOnce(resendBatched), unit: 'intents', target: '<= 0' },
      { name: 'Resend batch 100, 2/s burst 2: 429 answers', value: tooMany(resendBatched), unit: 'requests', target: '<= 0' },
      { name: `Resend batch 100, 1.9/s burst 1: ${DUE} drained in`, value: resendHeadroom.seconds, unit: 's', target: '<= 30' },
      { name: 'Resend batch 100, 1.9/s burst 1: 429 answers', value: tooMany(resendHeadroom), unit: 'requests', target: '<= 0' },
      { name: `Resend batch 1: ${RESEND_SINGLE} drained in (measured)`, value: resendSingle.seconds, unit: 's' },
      { name: 'Resend batch 1: measured rate', value: resendSingle.perSecond, unit: 'emails/s' },
      { name: `Resend batch 1: ${extrapolated(RESEND_SINGLE)}`, value: resendSingle.extrapolatedSeconds!, unit: 's' },
      { name: 'Resend batch 1: 429 answers', value: tooMany(resendSingle), unit: 'requests' },
      { name: `Postmark batch 500: ${DUE} drained in`, value: postmarkBatched.seconds, unit: 's' },
      { name: 'Postmark batch 500: rate', value: postmarkBatched.perSecond, unit: 'emails/s' },
      { name: `Postmark batch 1: ${POSTMARK_SINGLE} drained in (measured)`, value: postmarkSingle.seconds, unit: 's' },
      { name: 'Postmark batch 1: measured rate', value: postmarkSingle.perSecond, unit: 'emails/s' },
      { name: `Postmark batch 1: ${extrapolated(POSTMARK_SINGLE)}`, value: postmarkSingle.extrapolatedSeconds!, unit: 's' },
      { name: `SMTP pooled: ${SMTP_EMAILS} drained in`, value: smtp.seconds, unit: 's' },
      { name: 'SMTP pooled: rate', value: smtp.perSecond, unit: 'emails/s' },
      { name: 'SMTP pooled: connections the server saw', value: smtp.connections!.opened, unit: 'connections' },
      { name: 'every drain: intents delivered other than once', value: drains.reduce((n, d) => n + otherThanOnce(d), 0), unit: 'intents', target: '<= 0' },
    ];
    for (const d of drains) {
      process.stdout.write(
        `  ${d.label} batch ${d.batch}, ${d.rate.perSecond}/s burst ${d.rate.burst}: ${d.sent}/${d.emails} sent in ${d.seconds} s (${d.perSecond}/s)` +
          (d.extrapolatedSeconds !== undefined ? `, ${DUE} EXTRAPOLATED: ${d.extrapolatedSeconds} s` : '') +
          `; delivered twice ${d.duplicates}, never ${d.missing}, flagged ${d.possibleDuplicates}; requests ${JSON.stringify(d.requests)}` +
          (d.statuses ? `, answers ${JSON.stringify(d.statuses)}` : '') +
          (d.connections ? `, connections ${JSON.stringify(d.connections)}` : '') +
          `; attempts ${JSON.stringify(d.attempts)}; batches ${d.batches}\n`,
      );
    }
    return { figures, details: { due: DUE, drains } };
  },
};
