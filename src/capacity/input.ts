import { z } from 'zod';
import { MAX_BURST, MAX_PER_SECOND } from '../model/delivery-policy.js';
import { ValidationError } from '../errors.js';
import { describeZodError } from '../model/zod-issues.js';
import { FLAGS, type WorkloadField } from './flags.js';

/**
 * The workload the capacity model reads: from a YAML file, from flags (which
 * override the file field by field), and for what neither gives, from the
 * deployment's own configuration (the limiter policy, batch sizes, promises).
 * Bad input is a ValidationError naming the field (and its flag).
 */

export const PROVIDERS = ['sandbox', 'resend', 'postmark', 'ses', 'smtp'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** The flags live in flags.ts, which the CLI reads for its help without loading zod. */
export { FLAGS, type WorkloadField };

/** Defaults taken from the running configuration (src/config.ts), not from this file. */
export interface ConfigDefaults {
  provider: ProviderName;
  perSecond: number;
  burst: number;
  deliveryBatch: number;
  deliveryConcurrency: number;
  expiryBatch: number;
  expiryIntervalMs: number;
  promiseSeconds: number;
  expiryPromiseSeconds: number;
  /** LEASEHOLD_NOTICE_DEADLINE_S and LEASEHOLD_REMIND_BEFORE_S; null: off. */
  noticeDeadlineSeconds?: number | null;
  remindBeforeSeconds?: number | null;
}

// Flags arrive as strings, YAML as numbers or strings: both go through Number,
// and an empty string is not zero.
const toNumber = (v: unknown) => (typeof v === 'string' ? (v.trim() === '' ? Number.NaN : Number(v)) : v);

function number(min: number, max: number, options: { int?: boolean; exclusiveMin?: boolean } = {}) {
  const kind = options.int ? 'a whole number' : 'a number';
  const range = `${options.exclusiveMin ? 'greater than' : 'from'} ${min}${max === Infinity ? '' : ` ${options.exclusiveMin ? 'and at most' : 'to'} ${max}`}`;
  const message = `must be ${kind} ${range}`;
  let schema = z.number({ error: message }).refine(Number.isFinite, message);
  if (options.int) schema = schema.refine(Number.isInteger, message);
  schema = schema.refine((n) => (options.exclusiveMin ? n > min : n >= min) && n <= max, message);
  return z.preprocess(toNumber, schema);
}

const boolean = z.preprocess(
  (v) => (v === 'true' ? true : v === 'false' ? false : v),
  z.boolean({ error: 'must be true or false' }),
);

function workloadSchema(d: ConfigDefaults) {
  return z.strictObject({
    volume: z.strictObject({
      /** Emails sent per day: one per expired hold. */
      emailsPerDay: number(0, 1e10),
      /** Share of holds that expire (the rest are confirmed or cancelled): sets holds per day. */
      expiredShare: number(0, 1, { exclusiveMin: true }).default(1),
    }),
    burst: z
      .strictObject({
        /** Holds falling due together in the worst burst. */
        holds: number(0, 1e9, { int: true }).default(0),
        /** Over how long they fall due (0: all at the same moment). */
        windowSeconds: number(0, 86_400).default(0),
      })
      .default({ holds: 0, windowSeconds: 0 }),
    holdWindowSeconds: number(1, 2_592_000).default(1200),
    retentionDays: number(1, 3650, { int: true }).default(30),
    promiseSeconds: number(1, 31_536_000).default(d.promiseSeconds),
    expiryPromiseSeconds: number(1, 31_536_000).default(d.expiryPromiseSeconds),
    provider: z
      .strictObject({
        name: z.enum(PROVIDERS, { error: `must be one of ${PROVIDERS.join(', ')}` }).default(d.provider),
        perSecond: number(0, MAX_PER_SECOND, { exclusiveMin: true }).default(d.perSecond),
        burst: number(1, MAX_BURST, { int: true }).default(d.burst),
        /** Emails per day the account may send; absent: no daily quota. */
        dailyQuota: number(1, 1e12, { int: true }).optional(),
        /** Provider answer time per send. */
        latencyMs: number(0, 60_000).default(200),
      })
      .default({ name: d.provider, perSecond: d.perSecond, burst: d.burst, latencyMs: 200 }),
    deployment: z
      .strictObject({
        /** Machines each running `leasehold start` (both lanes, one delivery process). */
        workers: number(1, 1000, { int: true }).default(2),
        deliveryBatch: number(1, 10_000, { int: true }).default(d.deliveryBatch),
        deliveryConcurrency: number(1, 1000, { int: true }).default(d.deliveryConcurrency),
        expiryBatch: number(1, 100_000, { int: true }).default(d.expiryBatch),
        expiryIntervalMs: number(10, 3_600_000, { int: true }).default(d.expiryIntervalMs),
        /** Send attempts per email on average (retries, rate-limited attempts). */
        attemptsPerEmail: number(1, 1000).default(1),
      })
      .default({
        workers: 2,
        deliveryBatch: d.deliveryBatch,
        deliveryConcurrency: d.deliveryConcurrency,
        expiryBatch: d.expiryBatch,
        expiryIntervalMs: d.expiryIntervalMs,
        attemptsPerEmail: 1,
      }),
    /** The deadlines emails carry (migration 0024): which kinds the worst burst would make miss theirs. */
    deadlines: z
      .strictObject({
        /** Expiry and confirmation emails unsent this long after their moment are not sent. */
        noticeSeconds: number(1, 2_592_000).optional(),
        /** Reminders go out this long before expiry, their deadline; a burst of reminders due together. */
        reminderSeconds: number(1, 2_592_000).optional(),
      })
      .default({
        ...(d.noticeDeadlineSeconds ? { noticeSeconds: d.noticeDeadlineSeconds } : {}),
        ...(d.remindBeforeSeconds ? { reminderSeconds: d.remindBeforeSeconds } : {}),
      }),
    storage: z.strictObject({ bloatFactor: number(1, 10).default(1.3) }).default({ bloatFactor: 1.3 }),
    observability: z.strictObject({ logRetentionDays: number(1, 3650, { int: true }).default(30) }).default({ logRetentionDays: 30 }),
    /** Subtract each price's free monthly allowance (off by default: it is shared by the whole account). */
    freeTiers: boolean.default(false),
  });
}

export type Workload = z.output<ReturnType<typeof workloadSchema>>;

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `{ 'burst.holds': '5' }` -> `{ burst: { holds: '5' } }`, for flags. */
export function nest(flat: Partial<Record<WorkloadField, unknown>>): Plain {
  const out: Plain = {};
  for (const [path, value] of Object.entries(flat)) {
    if (value === undefined) continue;
    const keys = path.split('.');
    let node = out;
    for (const key of keys.slice(0, -1)) node = (node[key] = isPlain(node[key]) ? node[key] : {}) as Plain;
    node[keys.at(-1)!] = value;
  }
  return out;
}

/** Field-by-field: what `over` sets wins, nested objects merge. A base that is not a mapping is bad input. */
export function mergeInput(base: unknown, over: Plain): Plain {
  if (base === undefined || base === null) return { ...over };
  if (!isPlain(base)) throw new ValidationError('workload', 'must be a mapping of fields (see capacity/workload.example.yaml)');
  const out: Plain = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isPlain(value) && isPlain(out[key]) ? mergeInput(out[key], value) : value;
  }
  return out;
}

function fieldName(path: PropertyKey[]): string {
  const field = path.map(String).join('.');
  const flag = FLAGS[field as WorkloadField];
  return flag ? `${field} (${flag})` : field || 'workload';
}

/** Validate merged input; throws ValidationError naming the first bad field. */
export function parseWorkload(raw: unknown, defaults: ConfigDefaults): Workload {
  if (raw === undefined || raw === null) raw = {};
  if (!isPlain(raw)) throw new ValidationError('workload', 'must be a mapping of fields (see capacity/workload.example.yaml)');
  // Without a volume section the one required field is still named.
  const input = { volume: {}, ...raw };
  const schema = workloadSchema(defaults);
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const { path, message } = describeZodError(parsed.error, { schema, input });
  return fail(path, message);
}

function fail(path: PropertyKey[], message: string): never {
  throw new ValidationError(fieldName(path), message);
}
