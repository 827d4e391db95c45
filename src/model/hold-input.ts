import { createHash, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkJsonValue, storableText } from '../text.js';
import { sendableAddress } from './address.js';
import { onFirstUse } from '../zod.js';
import { describeZodError, zodValidationError, type IssueContext } from './zod-issues.js';

/** The id rule, shared by hold ids and tenants (and mirrored by the CHECKs and create_hold in migrations/). */
const ID_RULE = '[A-Za-z0-9][A-Za-z0-9._:-]{0,127}';
const ID_RULE_MESSAGE = '1-128 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit';

export const HOLD_ID_PATTERN = new RegExp(`^${ID_RULE}$`);
/** A tenant is an id, or '' (the empty tenant, every hold's default). */
export const TENANT_PATTERN = new RegExp(`^(?:${ID_RULE})?$`);
/** The tenant of a hold created without one. */
export const DEFAULT_TENANT = '';
export const MAX_TTL_SECONDS = 30 * 24 * 3600;
export const MAX_METADATA_BYTES = 16 * 1024;

/** A hold's deadline: ISO 8601 with a zone, or a Date (the library). */
const deadlineSchema = onFirstUse((z) =>
  z.union([z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' }), z.date()]),
);

/** A span of a hold's life in whole seconds, 1 to 30 days (ttlSeconds, remindBeforeSeconds). */
const secondsSchema = onFirstUse((z) =>
  z
    .number('must be a number')
    .int('must be a whole number of seconds')
    .min(1, 'must be at least 1')
    .max(MAX_TTL_SECONDS, `must be at most ${MAX_TTL_SECONDS} (30 days)`),
);

export const holdIdSchema = onFirstUse(() => storableText().regex(HOLD_ID_PATTERN, `must be ${ID_RULE_MESSAGE}`));

/** The tenant a hold belongs to (API body and `?tenant=` filters, library, CLI). */
export const tenantSchema = onFirstUse(() => storableText().regex(TENANT_PATTERN, `must be empty or ${ID_RULE_MESSAGE}`));

/**
 * The create-hold request, as the library and the HTTP API accept it.
 * Exactly one of expiresAt (ISO 8601 or Date, in the future, within 30 days)
 * and ttlSeconds (1..2592000).
 */
export const createHoldSchema = onFirstUse((z) =>
  z
    .object({
      id: holdIdSchema().optional(),
      // An internationalized domain is accepted and stored as punycode (model/address.ts sendableAddress; validateCreateHold converts it).
      customerEmail: storableText()
        .max(254, 'must be at most 254 characters')
        .superRefine((value, ctx) => {
          const sendable = sendableAddress(value);
          if ('problem' in sendable) ctx.addIssue({ code: 'custom', message: sendable.problem });
        }),
      expiresAt: deadlineSchema().optional(),
      ttlSeconds: secondsSchema().optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
      /** Whose hold this is, for a backend serving many customers of its own; default '' (the empty tenant). */
      tenant: tenantSchema().optional(),
      /** Send a reminder this many seconds before the hold expires (default: the service's LEASEHOLD_REMIND_BEFORE_S, off). */
      remindBeforeSeconds: secondsSchema().nullable().optional(),
      /** Send a confirmation email when the hold is confirmed (default: LEASEHOLD_NOTIFY_ON_CONFIRM, off). */
      notifyOnConfirm: z.boolean('must be true or false').optional(),
    })
    .strict(),
);

/** The extend request: exactly one of a new expiresAt (later than the current one) and ttlSeconds from now. */
export const extendHoldSchema = onFirstUse((z) =>
  z
    .object({
      expiresAt: deadlineSchema().optional(),
      ttlSeconds: secondsSchema().optional(),
    })
    .strict(),
);

export type ExtendHoldInput = z.input<ReturnType<typeof extendHoldSchema>>;

/** A valid extend request: the new deadline as an instant, or seconds from now. */
export function validateExtendHold(input: unknown): { expiresAt: Date | null; ttlSeconds: number | null } {
  const parsed = extendHoldSchema().safeParse(input);
  if (!parsed.success) throw toValidationError(parsed.error, '', { schema: extendHoldSchema(), input });
  const v = parsed.data;
  if ((v.expiresAt === undefined) === (v.ttlSeconds === undefined)) {
    throw new ValidationError('expiresAt', 'give exactly one of expiresAt and ttlSeconds');
  }
  const expiresAt = v.expiresAt === undefined ? null : new Date(v.expiresAt);
  if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new ValidationError('expiresAt', 'is not a valid date');
  return { expiresAt, ttlSeconds: v.ttlSeconds ?? null };
}

export type CreateHoldInput = z.input<ReturnType<typeof createHoldSchema>>;

export interface ValidHold {
  id: string;
  /** True when the caller supplied the id (so retries are idempotent). */
  clientId: boolean;
  customerEmail: string;
  expiresAt?: Date;
  ttlSeconds?: number;
  metadata: Record<string, unknown>;
  /** '' when the request named none. */
  tenant: string;
  /** Seconds before expiry to send a reminder, or null: none (the caller's default applies when the request named none). */
  remindBeforeSeconds: number | null | undefined;
  /** undefined: the request did not say (the caller's default applies). */
  notifyOnConfirm: boolean | undefined;
  /**
   * The request hash createHold stored before migration 0011; still matched
   * so a retry of a hold created then is recognised. New holds store the
   * database's fingerprint (hold_request_hash), shared with create_hold.
   */
  requestHash: string;
}

/**
 * A ZodError as a ValidationError naming the field, in our words
 * (model/zod-issues.ts). Give `context` (the schema and the value parsed)
 * so a missing field says `required` and an unknown one `did you mean`.
 */
export function toValidationError(error: z.ZodError, prefix = '', context: IssueContext = {}): ValidationError {
  return zodValidationError(error, { ...context, prefix });
}

/**
 * Validate a create-hold request's shape and content, and compute the hash
 * that decides whether a later request with the same id is the same request.
 * Nothing here depends on the clock: a retry of a request that was valid when
 * first sent must be recognised as the same request after its expiresAt
 * passed (see checkExpiresAt, applied only to requests that create).
 */
export function validateCreateHold(input: unknown): ValidHold {
  const parsed = createHoldSchema().safeParse(input);
  if (!parsed.success) throw toValidationError(parsed.error, '', { schema: createHoldSchema(), input });
  const v = parsed.data;
  if ((v.expiresAt === undefined) === (v.ttlSeconds === undefined)) {
    throw new ValidationError('expiresAt', 'give exactly one of expiresAt and ttlSeconds');
  }
  let expiresAt: Date | undefined;
  if (v.expiresAt !== undefined) {
    expiresAt = new Date(v.expiresAt);
    if (Number.isNaN(expiresAt.getTime())) throw new ValidationError('expiresAt', 'is not a valid date');
  }
  const metadata = v.metadata ?? {};
  // Before JSON.stringify: a deep enough value overflows its stack.
  checkJsonValue(metadata, 'metadata');
  const metadataJson = JSON.stringify(metadata);
  if (Buffer.byteLength(metadataJson) > MAX_METADATA_BYTES) {
    throw new ValidationError('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
  }
  // The schema checked it is sendable; this is its stored form.
  const sendable = sendableAddress(v.customerEmail);
  const customerEmail = 'address' in sendable ? sendable.address : v.customerEmail;
  // expiresAt as an instant, so the same moment written in another zone is the same request.
  const requestHash = createHash('sha256')
    .update(JSON.stringify([customerEmail, expiresAt ? expiresAt.toISOString() : null, v.ttlSeconds ?? null, metadataJson]))
    .digest('base64url');
  return {
    id: v.id ?? `hold_${randomUUID()}`,
    clientId: v.id !== undefined,
    customerEmail,
    ...(expiresAt ? { expiresAt } : { ttlSeconds: v.ttlSeconds! }),
    metadata,
    tenant: v.tenant ?? DEFAULT_TENANT,
    remindBeforeSeconds: v.remindBeforeSeconds,
    notifyOnConfirm: v.notifyOnConfirm,
    requestHash,
  };
}

/**
 * The rules on the deadline that depend on `now` (the caller's view of the
 * clock; the database enforces nothing about the future, so this is where
 * "in the past" and "absurdly far" are caught), and the reminder the
 * request asks for, which must fall after `now`.
 */
export function checkExpiresAt(hold: ValidHold, now: Date): void {
  if (hold.expiresAt !== undefined) {
    if (hold.expiresAt.getTime() <= now.getTime()) throw new ValidationError('expiresAt', 'must be in the future');
    if (hold.expiresAt.getTime() > now.getTime() + MAX_TTL_SECONDS * 1000) {
      throw new ValidationError('expiresAt', 'must be within 30 days');
    }
  }
  checkReminder(hold, now);
}

/**
 * A reminder asked for `remindBeforeSeconds` before a hold that does not
 * last that long would be due before the hold exists, and the database
 * writes none (reminder_write_, migration 0024): refused rather than
 * accepted and silently never sent. Only a request that names it is held to
 * this; the service's default (LEASEHOLD_REMIND_BEFORE_S) is skipped for a
 * short hold, as documented, and written if an extension leaves room.
 */
function checkReminder(hold: ValidHold, now: Date): void {
  const before = hold.remindBeforeSeconds;
  if (typeof before !== 'number') return;
  const lasts = hold.ttlSeconds ?? (hold.expiresAt!.getTime() - now.getTime()) / 1000;
  if (before < lasts) return;
  const length = hold.ttlSeconds !== undefined ? `ttlSeconds ${hold.ttlSeconds}` : `expiresAt is ${Math.floor(lasts)} seconds away`;
  throw new ValidationError('remindBeforeSeconds', `must be less than the hold lasts (${length}): a reminder ${before} seconds before expiry could never be sent`);
}

export function validateHoldId(id: unknown, field = 'id'): string {
  const parsed = holdIdSchema().safeParse(id);
  if (!parsed.success) throw new ValidationError(field, describeZodError(parsed.error, { input: id }).message);
  return parsed.data;
}

export function validateTenant(tenant: unknown, field = 'tenant'): string {
  const parsed = tenantSchema().safeParse(tenant);
  if (!parsed.success) throw new ValidationError(field, describeZodError(parsed.error, { input: tenant }).message);
  return parsed.data;
}
