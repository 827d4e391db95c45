import { createHash } from 'node:crypto';
import { configFileDocument, configFileFailure } from './config-file.js';
import { TENANT_PATTERN } from './hold-input.js';

/**
 * Operator access, pure: the roles, the tokens file
 * (LEASEHOLD_API_TOKENS_FILE) and the rule that decides whether a token may
 * make a call. The server (server/auth.ts) checks requests against these;
 * nothing here reads a file or a clock of its own.
 */

/** The roles, each allowing everything the one before it does. */
export const Role = {
  /** Every GET: status, listings, traces, the audit log; the dashboard read-only. */
  read: 'read',
  /** Also pause and resume, rate limits, replay and move, suppressions, holds (create, confirm, cancel, extend). */
  operate: 'operate',
  /** Also erasure, retention runs and tenant policy. */
  admin: 'admin',
} as const;
export type Role = (typeof Role)[keyof typeof Role];
export const ROLES: readonly Role[] = [Role.read, Role.operate, Role.admin];

export function roleAllows(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/** The name LEASEHOLD_API_TOKEN is known by: one `admin` token beside the file's. */
export const ENV_TOKEN_NAME = 'env';

/** A token name: what the audit log records (never the token). */
export const TOKEN_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/;

export interface ApiTokenEntry {
  name: string;
  role: Role;
  /** null: every tenant and the fleet-wide controls; otherwise only these tenants' objects. */
  tenants: readonly string[] | null;
  /** After this instant the token is refused; null: no end. */
  expiresAt: Date | null;
  /** sha256 of the token itself, 32 bytes. */
  sha256: Buffer;
}

/** What `leasehold tokens hash` prints and the file stores: the hex sha256 of the token's UTF-8 bytes. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The rule LEASEHOLD_API_TOKEN follows too: it travels in `Authorization: Bearer`, where whitespace ends it. */
export function tokenProblem(token: string): string | undefined {
  if (token.length < 16) return 'must be at least 16 characters';
  if (!/^[\x21-\x7e]+$/.test(token)) return 'must be printable ASCII without whitespace (it is sent in an Authorization: Bearer header)';
  return undefined;
}


const FIELDS = ['name', 'role', 'tenants', 'expiresAt', 'sha256'];

/**
 * Parse a tokens file. A mistake is a ConfigError of one line naming the
 * entry and the field (`tokens[1] (acme-app).expiresAt: ...`), so a broken
 * file is refused at start and on reload, never half applied.
 */
export function parseTokensFile(text: string, source = 'LEASEHOLD_API_TOKENS_FILE'): ApiTokenEntry[] {
  const fail = configFileFailure(source);
  const doc = configFileDocument(text, source);
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return fail('', 'must be a mapping with a `tokens` list');
  const extra = Object.keys(doc).filter((key) => key !== 'tokens');
  if (extra.length > 0) fail(extra[0]!, 'is not a field of the tokens file (tokens)');
  const list = (doc as { tokens?: unknown }).tokens;
  if (!Array.isArray(list)) return fail('tokens', 'must be a list of tokens');
  const names = new Set<string>();
  const hashes = new Set<string>();
  return list.map((raw: unknown, i): ApiTokenEntry => {
    let at = `tokens[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return fail(at, 'must be a mapping (name, role, sha256, tenants?, expiresAt?)');
    const entry = raw as Record<string, unknown>;
    const { name, role, tenants, expiresAt, sha256 } = entry;
    if (typeof name !== 'string' || !TOKEN_NAME.test(name)) {
      fail(`${at}.name`, 'must be lowercase letters, digits, ".", "_" and "-" (at most 63), starting with a letter or digit');
    }
    at = `${at} (${name as string})`;
    if (name === ENV_TOKEN_NAME) fail(`${at}.name`, `"${ENV_TOKEN_NAME}" is LEASEHOLD_API_TOKEN's name; choose another`);
    if (names.has(name as string)) fail(`${at}.name`, 'is named twice');
    names.add(name as string);
    for (const key of Object.keys(entry)) if (!FIELDS.includes(key)) fail(`${at}.${key}`, `is not a field of a token (${FIELDS.join(', ')})`);
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) fail(`${at}.role`, `must be one of ${ROLES.join(', ')}`);
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256)) {
      fail(`${at}.sha256`, 'must be the 64 hex digits `leasehold tokens hash` prints (the file never holds a token itself)');
    }
    const hex = (sha256 as string).toLowerCase();
    if (hashes.has(hex)) fail(`${at}.sha256`, 'is the hash of another entry too: each token has one name');
    hashes.add(hex);
    let scope: string[] | null = null;
    if (tenants !== undefined && tenants !== null) {
      if (!Array.isArray(tenants) || tenants.length === 0) fail(`${at}.tenants`, 'must be a non-empty list of tenants (leave it out for every tenant)');
      scope = (tenants as unknown[]).map((t, j) => {
        if (typeof t !== 'string' || !TENANT_PATTERN.test(t)) fail(`${at}.tenants[${j}]`, 'must be a tenant: empty or 1-128 letters, digits, ".", "_", ":" or "-"');
        return t as string;
      });
    }
    let expires: Date | null = null;
    if (expiresAt !== undefined && expiresAt !== null) {
      // YAML reads an unquoted timestamp as a string here (the core schema); a Date is accepted too.
      const value = expiresAt instanceof Date ? expiresAt : typeof expiresAt === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(expiresAt) ? new Date(expiresAt) : undefined;
      if (!value || Number.isNaN(value.getTime())) fail(`${at}.expiresAt`, 'must be an ISO 8601 time with a zone, e.g. 2027-06-30T00:00:00Z');
      expires = value!;
    }
    return { name: name as string, role: role as Role, tenants: scope, expiresAt: expires, sha256: Buffer.from(hex, 'hex') };
  });
}

/**
 * Whether a route reaches across tenants. `tenant`: holds, intents and a
 * tenant's own pause, each checked against the token's tenants (another
 * tenant's object is a 404); `fleet`: everything shared by all tenants
 * (fleet pause, rate limits, accounts, suppressions, retention, the audit
 * log), refused to a token limited to tenants; `any`: no tenant data
 * (the OpenAPI document, the token's own description).
 */
export type RouteScope = 'tenant' | 'fleet' | 'any';

/** Whether a token may see `tenant`'s objects. */
export function tenantAllowed(token: Pick<ApiTokenEntry, 'tenants'>, tenant: string): boolean {
  return token.tenants === null || token.tenants.includes(tenant);
}
