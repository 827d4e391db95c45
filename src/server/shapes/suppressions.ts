import { z } from 'zod';
import { SuppressionReason, type Suppression } from '../../model/suppression-reasons.js';
import { Timestamp, valuesOf, type SameKeys } from './common.js';

/** The answers about suppressed addresses (model/suppression-reasons.ts Suppression). */

export const SuppressionShape = z
  .object({
    addressHash: z.string().describe('sha256 hex of the trimmed, lower-cased address: names it after erasure'),
    address: z.string().nullable().describe('null once erasure removed it (the hash keeps the suppression working)'),
    reason: z.enum(valuesOf(SuppressionReason)),
    detail: z.string().nullable(),
    provider: z.string().nullable().describe('the provider whose event caused it; null for manual ones'),
    createdAt: Timestamp,
  })
  .meta({ id: 'Suppression' });

const _suppression: SameKeys<z.output<typeof SuppressionShape>, Suppression> = true;
void _suppression;
