import { DAYS_PER_MONTH, HOURS_PER_MONTH, MEASURED, SECONDS_PER_DAY } from './constants.js';
import type { Workload } from './input.js';
import type { RowsReport, StatementsReport } from './reports.js';
import type { PriceKey, PriceTable } from './prices.js';

/**
 * A month of the full path (scheduling, queueing, state, email, logs) for
 * three designs, one line per billed thing, each with its assumption.
 * Quantities come from the workload; unit prices from the price table.
 */

export interface CostLine {
  item: string;
  quantity: number;
  unit: string;
  unitUsd: number;
  usd: number;
  /** The price table entry used ('email' for the provider plan, null when nothing is billed). */
  price: PriceKey | 'email' | null;
  assumption: string;
}

export interface DesignCost {
  id: 'leasehold' | 'timer-per-hold' | 'managed-queue';
  name: string;
  monthlyUsd: number;
  lines: CostLine[];
  notes: string[];
}

const GIB = 1024 ** 3;
const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;

interface Inputs {
  rows: RowsReport;
  statements: StatementsReport;
}

export function designCosts(w: Workload, prices: PriceTable, inputs: Inputs): DesignCost[] {
  return [leasehold(w, prices, inputs), timerPerHold(w, prices, inputs), managedQueue(w, prices, inputs)].map((design) =>
    applyFreeTiers(design, w, prices),
  );
}

function volumes(w: Workload) {
  const emails = w.volume.emailsPerDay * DAYS_PER_MONTH;
  const holds = emails / w.volume.expiredShare;
  return { emails, holds, settled: holds - emails, sends: emails * w.deployment.attemptsPerEmail };
}

function line(prices: PriceTable, key: PriceKey, item: string, quantity: number, assumption: string): CostLine {
  const price = prices.prices[key];
  const billed = price.minimumQuantity !== undefined ? Math.max(price.minimumQuantity, quantity) : quantity;
  return { item, quantity: billed, unit: price.unit, unitUsd: price.usd, usd: billed * price.usd, price: key, assumption };
}

const firstSentence = (note: string | undefined) => (note ?? 'as priced').split(/\. |, | \(/)[0]!.trim();

function nothing(item: string, assumption: string): CostLine {
  return { item, quantity: 0, unit: '-', unitUsd: 0, usd: 0, price: null, assumption };
}

function email(w: Workload, prices: PriceTable): CostLine {
  const plan = prices.email[w.provider.name];
  const { emails } = volumes(w);
  const over = Math.max(0, emails - plan.includedPerMonth);
  const usd = plan.monthlyUsd + (over * plan.usdPerThousandOver) / 1000;
  const money = (n: number) => `$${n.toFixed(2)}`;
  const fee = plan.monthlyUsd > 0 ? `${money(plan.monthlyUsd)}/month including ${plan.includedPerMonth.toLocaleString('en-US')}, then ` : '';
  return {
    item: `email (${w.provider.name})`,
    quantity: emails,
    unit: 'email',
    unitUsd: plan.usdPerThousandOver / 1000,
    usd,
    price: 'email',
    assumption: `${fee}${money(plan.usdPerThousandOver)} per 1,000; the same in every design (one accepted email per expired hold)${plan.note ? `. ${plan.note}` : ''}`,
  };
}

function logLines(prices: PriceTable, bytesPerMonth: number, retentionDays: number, what: string): CostLine[] {
  const gb = bytesPerMonth / GIB;
  const stored = (gb / DAYS_PER_MONTH) * retentionDays;
  return [
    line(prices, 'log_ingest_gb', 'logs ingested', gb, what),
    line(prices, 'log_storage_gb_month', 'logs retained', stored, `${retentionDays} days of the above kept (uncompressed size: an upper estimate)`),
  ];
}

/** API log lines every design shares: hold.created for every hold, hold.confirmed/cancelled for the rest. */
function apiLogBytes(w: Workload): number {
  const { holds, settled } = volumes(w);
  return (holds + settled) * MEASURED.logBytesPerApiLine;
}

function leasehold(w: Workload, prices: PriceTable, { rows, statements }: Inputs): DesignCost {
  const { emails, settled, sends } = volumes(w);
  const workers = w.deployment.workers;
  const storageGb = rows.atRetention.bytes / GIB;
  const peak = statements.burst?.total ?? statements.average.total;
  return {
    id: 'leasehold',
    name: 'this design: one small PostgreSQL + workers',
    lines: [
      line(
        prices,
        'postgres_instance_hour',
        'database instance',
        HOURS_PER_MONTH,
        `${firstSentence(prices.prices.postgres_instance_hour.note)}, running all the time; it carries every lane's statements (about ${Math.ceil(statements.average.total)}/s on average, ${Math.ceil(peak)}/s at the worst burst)`,
      ),
      line(
        prices,
        'postgres_storage_gb_month',
        'database storage',
        storageGb,
        `${w.retentionDays} days of holds, intents and attempts at the measured row sizes (${(storageGb * 1024).toFixed(1)} MiB); the price's minimum allocation applies`,
      ),
      line(
        prices,
        'worker_instance_hour',
        'workers',
        workers * HOURS_PER_MONTH,
        `${workers} x ${firstSentence(prices.prices.worker_instance_hour.note)}, each running \`leasehold start\` (API, expiry lane, delivery lane)${workers > 1 ? '; the lanes survive losing one' : '; one machine: no spare'}`,
      ),
      nothing('scheduler invocations', 'none: the expiry lane is a loop in the workers, not a billed scheduler'),
      nothing('queue operations', 'none: the outbox is a table in the same database; its statements are inside the instance price'),
      email(w, prices),
      ...logLines(
        prices,
        emails * MEASURED.logBytesPerExpiredHold + (settled * 2 + (sends - emails) * 2) * MEASURED.logBytesPerApiLine,
        w.observability.logRetentionDays,
        `leasehold's structured logs: ${MEASURED.logBytesPerExpiredHold} B measured per expired hold (hold created, its share of the expiry batch's holds.expired and of the round's delivery.recorded), two lines per other hold and per extra attempt`,
      ),
    ],
    notes: [
      'expiry and its email intent commit in one transaction; a crash loses neither, due rows stay queryable and replayable',
      'the provider call is at-least-once: duplicates are visible (possible_duplicate) or deduplicated by the provider key',
      'expiry lateness measured in milliseconds (BENCHMARKS.md); one shared token bucket paces every worker',
    ],
    monthlyUsd: 0,
  };
}

function timerPerHold(w: Workload, prices: PriceTable, _inputs: Inputs): DesignCost {
  const { holds, sends } = volumes(w);
  const a = prices.assumptions;
  const gbSeconds = sends * (a.lambdaMemoryMb.value / 1024) * ((w.provider.latencyMs + a.handlerExtraMs.value) / 1000);
  const storageGb = (holds / DAYS_PER_MONTH) * w.retentionDays * (a.dynamodbItemBytes.value / GIB);
  const delay =
    w.holdWindowSeconds <= 900
      ? `a delayed queue message (SQS DelaySeconds <= 900) could carry a ${w.holdWindowSeconds} s window too`
      : `a ${w.holdWindowSeconds} s window is longer than a delayed queue message can wait (SQS: 900 s), so a scheduler holds the timer`;
  return {
    id: 'timer-per-hold',
    name: 'one timer per hold (a one-time schedule per hold + a handler)',
    lines: [
      line(
        prices,
        'scheduler_invocation',
        'scheduler invocations',
        sends,
        `one one-time schedule created with each hold, deleted when it is confirmed or cancelled (not billed); only expiring holds fire, plus retries; ${delay}`,
      ),
      line(prices, 'lambda_request', 'handler requests', sends, 'the timer invokes a handler that expires the hold and calls the provider'),
      line(
        prices,
        'lambda_gb_second',
        'handler compute',
        gbSeconds,
        `${a.lambdaMemoryMb.value} MB for the provider call (${w.provider.latencyMs} ms) plus ${a.handlerExtraMs.value} ms: ${a.handlerExtraMs.note}`,
      ),
      line(prices, 'dynamodb_write_unit', 'hold state writes', holds * 2, 'holds live in DynamoDB on demand: one write to create, one to leave held (items under 1 KB)'),
      line(
        prices,
        'dynamodb_storage_gb_month',
        'hold state storage',
        storageGb,
        `${w.retentionDays} days of holds at ${a.dynamodbItemBytes.value} B each; no intents or attempts table, so an email's story is only in the logs`,
      ),
      nothing('queue operations', 'none: the timer calls the handler directly; a 429 or crash leans on the scheduler retry policy and a dead-letter queue (not costed)'),
      email(w, prices),
      ...logLines(
        prices,
        sends * (a.lambdaPlatformLogBytes.value + 2 * a.handlerLogBytesPerEvent.value) + apiLogBytes(w),
        w.observability.logRetentionDays,
        `per invocation: Lambda's START/END/REPORT (${a.lambdaPlatformLogBytes.value} B) and two events; the API's lines per hold`,
      ),
    ],
    notes: [
      'the handler expires and sends in one step: a crash between them, or a provider 429 after the retries run out, loses the email silently',
      `no shared limiter: a burst fires its handlers at once, so everything past the provider's burst meets 429s`,
      'duplicates are hidden inside the handler; there is no attempts history to tell them apart',
    ],
    monthlyUsd: 0,
  };
}

function managedQueue(w: Workload, prices: PriceTable, _inputs: Inputs): DesignCost {
  const { emails, holds, sends } = volumes(w);
  const a = prices.assumptions;
  const memGb = a.lambdaMemoryMb.value / 1024;
  const scans = SECONDS_PER_MONTH / a.scanIntervalSeconds.value;
  const emailsPerScan = emails / scans;
  const readUnits = scans * Math.max(1, Math.ceil((emailsPerScan * a.dynamodbItemBytes.value) / 4096));
  const batch = a.sqsBatchSize.value;
  const idleReceives = (a.sqsIdlePollers.value * SECONDS_PER_MONTH) / a.sqsLongPollSeconds.value;
  const storageGb = (holds / DAYS_PER_MONTH) * w.retentionDays * (a.dynamodbItemBytes.value / GIB);
  const emailsPerSecond = w.volume.emailsPerDay / SECONDS_PER_DAY;
  return {
    id: 'managed-queue',
    name: 'managed scheduler + queue (EventBridge Scheduler + SQS + Lambda)',
    lines: [
      line(
        prices,
        'scheduler_invocation',
        'scheduler invocations',
        scans,
        `a recurring schedule every ${a.scanIntervalSeconds.value} s starts a scan (${a.scanIntervalSeconds.note})`,
      ),
      line(prices, 'lambda_request', 'scanner requests', scans, 'one scanner invocation per scheduled run'),
      line(prices, 'lambda_gb_second', 'scanner compute', scans * memGb * (a.scanMs.value / 1000), `${a.lambdaMemoryMb.value} MB for ${a.scanMs.value} ms: ${a.scanMs.note}`),
      line(
        prices,
        'dynamodb_write_unit',
        'hold state writes',
        holds * 4,
        'holds in DynamoDB on demand with a sparse due-hold index: create and leave held each write the item and the index',
      ),
      line(prices, 'dynamodb_read_unit', 'due-hold queries', readUnits, 'one index query per scan, 4 KB per read unit'),
      line(prices, 'dynamodb_storage_gb_month', 'hold state storage', storageGb, `${w.retentionDays} days of holds at ${a.dynamodbItemBytes.value} B each`),
      line(
        prices,
        'sqs_request',
        'queue operations',
        emails / batch + 2 * sends,
        `batched sends (${batch} per request), one receive and one delete per message: ` +
          (emailsPerSecond < batch ? `at ${emailsPerSecond.toFixed(2)} emails/s on average batches rarely fill` : 'an upper estimate, full batches would cut receives and deletes tenfold'),
      ),
      line(
        prices,
        'sqs_request',
        'queue polling while idle',
        idleReceives,
        `${a.sqsIdlePollers.value} long polls every ${a.sqsLongPollSeconds.value} s: ${a.sqsIdlePollers.note}`,
      ),
      line(prices, 'lambda_request', 'sender requests', sends, 'one sender invocation per message (batches of one at low volume)'),
      line(
        prices,
        'lambda_gb_second',
        'sender compute',
        sends * memGb * ((w.provider.latencyMs + a.handlerExtraMs.value) / 1000),
        `${a.lambdaMemoryMb.value} MB for the provider call (${w.provider.latencyMs} ms) plus ${a.handlerExtraMs.value} ms`,
      ),
      email(w, prices),
      ...logLines(
        prices,
        scans * (a.lambdaPlatformLogBytes.value + a.handlerLogBytesPerEvent.value) +
          sends * (a.lambdaPlatformLogBytes.value + 2 * a.handlerLogBytesPerEvent.value) +
          apiLogBytes(w),
        w.observability.logRetentionDays,
        `Lambda's START/END/REPORT (${a.lambdaPlatformLogBytes.value} B) per invocation, one event per scan and two per send, the API's lines per hold`,
      ),
    ],
    notes: [
      `holds expire up to ${a.scanIntervalSeconds.value} s late (the schedule's rate), against an expiry promise of ${w.expiryPromiseSeconds} s`,
      'expiry and enqueue are two systems: a scanner crash between the update and SendMessage loses the email unless the scan is made idempotent',
      "pacing is Lambda's maximum concurrency (sends/s ~ concurrency / latency), not a token bucket; a 429 returns the message after its visibility timeout",
    ],
    monthlyUsd: 0,
  };
}

/** Spend each price's free monthly allowance across the design's lines (only with freeTiers). */
function applyFreeTiers(design: DesignCost, w: Workload, prices: PriceTable): DesignCost {
  const left = new Map<PriceKey, number>();
  const lines = design.lines.map((l) => {
    if (!w.freeTiers || l.price === null || l.price === 'email') return l;
    const free = prices.prices[l.price].freePerMonth;
    if (free === undefined) return l;
    const remaining = left.get(l.price) ?? free;
    const used = Math.min(remaining, l.quantity);
    left.set(l.price, remaining - used);
    if (used === 0) return l;
    return { ...l, usd: (l.quantity - used) * l.unitUsd, assumption: `${l.assumption}; free tier: ${used.toLocaleString('en-US', { maximumFractionDigits: 2 })} ${l.unit} free` };
  });
  return { ...design, lines, monthlyUsd: lines.reduce((sum, l) => sum + l.usd, 0) };
}
