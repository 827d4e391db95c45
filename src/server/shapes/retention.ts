import { z } from 'zod';
import type { RetentionPolicy } from '../../model/retention-policy.js';
import type { AddressErasure } from '../../retention/address-erasure.js';
import type { TenantErasure } from '../../retention/erase.js';
import type { OldestRetained, RetentionPreview } from '../../retention/preview.js';
import type { PruneRun } from '../../retention/prune.js';
import type { SameKeys } from './common.js';

/** The answers of /v1/retention, /v1/retention/prune and /v1/erasures. */

const count = () => z.number().int().nonnegative();
const days = () => z.number().int().nullable();
/** Rows per table (a map: the tables retention reaches, retention/policy.ts RETENTION_TABLES). */
const perTable = (what: string) => z.record(z.string(), count()).describe(`${what}, per table`);

export const RetentionPolicyShape = z
  .object({
    retentionDays: days().describe('finished stories are deleted this many days after they ended (null: kept forever)'),
    erasePiiAfterDays: days().describe('personal data is erased this many days after a story ended (null: never by age)'),
    batchSize: z.number().int().describe('most stories (or standalone rows) per transaction'),
    intervalMs: z.number().int().describe('longest sleep of the prune worker when there is nothing to do'),
    auditRetentionDays: days().optional().describe('audit entries are deleted this many days old (null: kept; absent: 365)'),
  })
  .meta({ id: 'RetentionPolicy', description: 'LEASEHOLD_RETENTION_DAYS, LEASEHOLD_ERASE_PII_AFTER_DAYS and the rest, as this server applies them' });

/** `GET /v1/retention`. */
export const RetentionShape = z
  .object({
    policy: RetentionPolicyShape,
    oldestAgeSeconds: z.record(z.string(), z.number()).describe('per table with an age of its own: seconds since its oldest finished row ended (0: none)'),
    oldestUnerasedAgeSeconds: z.number().describe('seconds since the oldest finished hold not yet erased ended (0: none)'),
  })
  .meta({ id: 'Retention' });

const PreviewShape = z.object({
  dryRun: z.literal(true),
  policy: RetentionPolicyShape,
  prune: perTable('rows a run would delete'),
  erase: perTable('rows a run would erase (after deleting the above)'),
  keptPendingStories: count().describe('stories past the retention kept because their email is pending or ended recently'),
});

const RunShape = z.object({
  dryRun: z.literal(false),
  policy: RetentionPolicyShape,
  pruned: perTable('rows deleted'),
  erased: perTable('rows erased'),
  rounds: count(),
  complete: z.boolean().describe('false: the 10 s budget ran out with work left (the prune worker carries on)'),
});

/** `POST /v1/retention/prune`: a preview (dryRun) or the run. */
export const PruneAnswerShape = z.discriminatedUnion('dryRun', [PreviewShape, RunShape]).meta({ id: 'PruneAnswer' });

const TenantErasureShape = z.object({
  counts: perTable('rows changed (or, for tables erased by deletion, deleted)'),
  stories: count().describe('stories erased (holds whose personal data went)'),
  batches: count().describe('transactions it took'),
  rejectedPending: count().describe('pending intents rejected so nothing more is sent'),
  inFlight: count().describe('of those, leased: a send may have been in flight and may still arrive'),
  heldHolds: count().describe('held holds of the tenant, left untouched (live reservations)'),
  heldHoldIds: z.array(z.string()).describe('the first 100 of their ids'),
});

const AddressErasureShape = z.object({
  counts: perTable('rows changed (or, for tables erased by deletion, deleted)'),
  rejectedPending: count().describe('pending intents of the address rejected so nothing more is sent'),
  inFlight: count().describe('of those, leased: a send may have been in flight and may still arrive'),
  heldHoldIds: z.array(z.string()).describe('held holds of the address: live reservations, left untouched'),
});

/** `POST /v1/erasures`: a tenant's erasure, or an address's (the tenant's is tried first: it has every field of the other). */
export const ErasureShape = z.union([TenantErasureShape.meta({ id: 'TenantErasure' }), AddressErasureShape.meta({ id: 'AddressErasure' })]);

type Run = { dryRun: false; policy: RetentionPolicy } & PruneRun;
type Preview = { dryRun: true; policy: RetentionPolicy } & RetentionPreview;
const _policy: SameKeys<z.output<typeof RetentionPolicyShape>, RetentionPolicy> = true;
const _retention: SameKeys<z.output<typeof RetentionShape>, { policy: RetentionPolicy } & OldestRetained> = true;
const _preview: SameKeys<z.output<typeof PreviewShape>, Preview> = true;
const _run: SameKeys<z.output<typeof RunShape>, Run> = true;
const _tenant: SameKeys<z.output<typeof TenantErasureShape>, TenantErasure> = true;
const _address: SameKeys<z.output<typeof AddressErasureShape>, AddressErasure> = true;
void [_policy, _retention, _preview, _run, _tenant, _address];
