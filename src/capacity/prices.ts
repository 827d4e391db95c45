import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { describeZodError } from '../model/zod-issues.js';
import { PROVIDERS } from './input.js';

/**
 * The price table (capacity/prices.yaml by default): every unit price with
 * the page it came from and the date it was written down, the email plans,
 * and the assumptions the two alternative designs are costed under. Nothing
 * is fetched at run time; operators edit the file.
 */

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date written YYYY-MM-DD');
const url = z.url({ error: 'must be the URL of the page the price came from' });
const amount = z.number({ error: 'must be a number' }).min(0, 'must be 0 or more');

const price = z.strictObject({
  usd: amount,
  /** What one `usd` buys: "hour", "GB-month", "request", ... */
  unit: z.string().min(1),
  /** Free quantity per month (applied only with `freeTiers: true`). */
  freePerMonth: amount.optional(),
  /** Smallest quantity billed (e.g. a storage minimum). */
  minimumQuantity: amount.optional(),
  source: url,
  taken: date,
  note: z.string().optional(),
});

const emailPlan = z.strictObject({
  monthlyUsd: amount,
  includedPerMonth: amount,
  usdPerThousandOver: amount,
  source: z.union([url, z.literal('none')]),
  taken: date,
  note: z.string().optional(),
});

/** Assumptions about the alternative designs: not prices, but just as editable. */
const assumption = (schema: z.ZodNumber) => z.strictObject({ value: schema, note: z.string().min(1) });

export const PRICE_KEYS = [
  'postgres_instance_hour',
  'postgres_storage_gb_month',
  'worker_instance_hour',
  'scheduler_invocation',
  'sqs_request',
  'lambda_request',
  'lambda_gb_second',
  'dynamodb_write_unit',
  'dynamodb_read_unit',
  'dynamodb_storage_gb_month',
  'log_ingest_gb',
  'log_storage_gb_month',
] as const;
export type PriceKey = (typeof PRICE_KEYS)[number];

const pricesSchema = z.strictObject({
  currency: z.literal('USD', { error: 'must be USD (the model does not convert)' }),
  region: z.string().min(1),
  recorded: date,
  warning: z.string().min(1),
  prices: z.strictObject(Object.fromEntries(PRICE_KEYS.map((k) => [k, price])) as Record<PriceKey, typeof price>),
  email: z.strictObject(Object.fromEntries(PROVIDERS.map((p) => [p, emailPlan])) as Record<(typeof PROVIDERS)[number], typeof emailPlan>),
  assumptions: z.strictObject({
    lambdaMemoryMb: assumption(z.number().min(128).max(10_240)),
    handlerExtraMs: assumption(z.number().min(0)),
    scanIntervalSeconds: assumption(z.number().min(60)),
    scanMs: assumption(z.number().min(1)),
    lambdaPlatformLogBytes: assumption(z.number().min(0)),
    handlerLogBytesPerEvent: assumption(z.number().min(0)),
    dynamodbItemBytes: assumption(z.number().min(1)),
    sqsBatchSize: assumption(z.number().int().min(1).max(10)),
    sqsIdlePollers: assumption(z.number().int().min(0)),
    sqsLongPollSeconds: assumption(z.number().min(1).max(20)),
  }),
});

export type PriceTable = z.output<typeof pricesSchema>;
export type Price = z.output<typeof price>;
export type EmailPlan = z.output<typeof emailPlan>;

/** Validate a parsed price table; throws ValidationError naming the field (prefixed `prices:`). */
export function parsePrices(raw: unknown): PriceTable {
  const parsed = pricesSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const { path, message } = describeZodError(parsed.error, { schema: pricesSchema, input: raw });
  throw new ValidationError(`price table ${path.map(String).join('.') || '(top level)'}`, message);
}
