import { z } from 'zod';
import { AUDIT_ACTIONS, type AuditAction } from '../../model/audit-actions.js';
import { ROLES, type Role } from '../../model/api-tokens.js';
import type { AuditEntry, AuditPage } from '../../tables/audit-log.js';
import type { Principal } from '../auth.js';
import { page, Timestamp, type SameKeys } from './common.js';

/** The answers of `GET /v1/audit` and `GET /v1/token`. */

export const AuditEntryShape = z
  .object({
    id: z.number().int(),
    at: Timestamp,
    actor: z.string().describe('a token name, `cli:<os user>`, `library` or `library:<name>`'),
    action: z.enum(AUDIT_ACTIONS as [AuditAction, ...AuditAction[]]),
    target: z.string().nullable().describe('what it acted on: an account, an intent id, a tenant, a suppression hash, ...'),
    requestId: z.string().nullable().describe("the HTTP request's x-request-id (null: not through the API)"),
    before: z.unknown().describe('the setting before the change, where one changed (null: none)'),
    after: z.unknown().describe('the setting after the change (null: none)'),
    detail: z.unknown().describe('what else the action records: counts, reasons (never an address or a body)'),
  })
  .meta({ id: 'AuditEntry' });

export const AuditPageShape = page('entries', AuditEntryShape).meta({ id: 'AuditPage' });

/** `GET /v1/token`: who the calling token is. */
export const TokenShape = z
  .object({
    name: z.string(),
    role: z.enum(ROLES as [Role, ...Role[]]).describe('read, operate or admin'),
    tenants: z.array(z.string()).readonly().nullable().describe('the tenants it is limited to (null: every tenant)'),
  })
  .meta({ id: 'Token' });

const _entry: SameKeys<z.output<typeof AuditEntryShape>, AuditEntry> = true;
const _page: SameKeys<z.output<typeof AuditPageShape>, AuditPage> = true;
const _token: SameKeys<z.output<typeof TokenShape>, Principal> = true;
void [_entry, _page, _token];
