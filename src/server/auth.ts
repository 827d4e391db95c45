import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError } from '../errors.js';
import { AuditAction, type AuditActor } from '../model/audit-actions.js';
import { ENV_TOKEN_NAME, parseTokensFile, Role, roleAllows, type ApiTokenEntry, type RouteScope } from '../model/api-tokens.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { AuditRecord } from '../tables/audit-log.js';
import { FailureLimiter, RefusalSampler } from './auth-limits.js';
import { ApiError } from './errors.js';

/**
 * Who may call /v1: named tokens with roles (model/api-tokens.ts), checked
 * in the `onRequest` hook, before the body is read or validated, so an
 * unauthorized client learns nothing from validation errors. Refusals are
 * counted per client address (a lockout answers 429 for a while), in a
 * metric, and in the audit log, sampled per token name so a flood cannot
 * fill it.
 */

/** What each route declares (route option `config`); the route list is the one source. */
export interface RouteAccess {
  role: Role;
  scope: RouteScope;
  /**
   * Why a mutating route writes no audit entry (holds: application traffic,
   * whose history is the hold's own row). Unset on a POST/PUT/DELETE: it
   * writes one, and test/server/audit.test.ts checks it does.
   */
  unaudited?: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
}

/** Route options declaring who may call it: `app.post('/x', access('operate', 'fleet'), handler)`. */
export function access(role: Role, scope: RouteScope, unaudited?: string): { config: { access: RouteAccess } } {
  return { config: { access: { role, scope, ...(unaudited ? { unaudited } : {}) } } };
}

/** The registration check every /v1 route passes (an `onRoute` hook): a route without declared access is an error at start. */
export function checkRouteAccess(route: { method: string | string[]; url: string; config?: { access?: RouteAccess } }): void {
  if (!route.config?.access) throw new Error(`route ${[route.method].flat().join(',')} ${route.url} declares no access (role and scope): see server/auth.ts access()`);
}

/** The token a request came with, once accepted. */
export interface Principal {
  name: string;
  role: Role;
  tenants: readonly string[] | null;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * The tokens in force: LEASEHOLD_API_TOKEN (one `admin` token named `env`)
 * and the file's. Several may be active at once, which is how a token is
 * rotated without a restart: add the new one, reload, move the clients,
 * remove the old one, reload. `replace` swaps the file's tokens as a whole.
 */
export class ApiTokens {
  private fileEntries: readonly ApiTokenEntry[];
  private readonly envEntry: ApiTokenEntry | undefined;

  constructor(options: { envToken?: string | undefined; entries?: readonly ApiTokenEntry[]; file?: string | undefined }) {
    this.envEntry = options.envToken
      ? { name: ENV_TOKEN_NAME, role: Role.admin, tenants: null, expiresAt: null, sha256: digest(options.envToken) }
      : undefined;
    this.fileEntries = options.entries ?? [];
    this.file = options.file;
    if (!this.envEntry && this.fileEntries.length === 0 && !this.file) throw new Error('an API token is required');
  }

  /** The tokens file this set reloads from (LEASEHOLD_API_TOKENS_FILE), if any. */
  readonly file: string | undefined;

  /** Read and parse `file`: a ConfigError naming the entry and field, or the file when it cannot be read. */
  static async readFile(file: string): Promise<ApiTokenEntry[]> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new ConfigError('LEASEHOLD_API_TOKENS_FILE', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    return parseTokensFile(text);
  }

  /** Read the file again; a broken one throws and the tokens in force stay as they were. Returns the names now in force. */
  async reload(): Promise<string[]> {
    if (!this.file) return this.names();
    this.replace(await ApiTokens.readFile(this.file));
    return this.names();
  }

  replace(entries: readonly ApiTokenEntry[]): void {
    this.fileEntries = entries;
  }

  names(): string[] {
    return this.all().map((entry) => entry.name);
  }

  private all(): ApiTokenEntry[] {
    return [...(this.envEntry ? [this.envEntry] : []), ...this.fileEntries];
  }

  /**
   * The entry whose hash matches `token`. Every entry is compared, with
   * timingSafeEqual over fixed-length digests, and none is skipped once one
   * matched, so neither the token's length nor its place in the file shows
   * in the time taken.
   */
  find(token: string): ApiTokenEntry | undefined {
    const presented = digest(token);
    let found: ApiTokenEntry | undefined;
    for (const entry of this.all()) {
      if (timingSafeEqual(presented, entry.sha256) && !found) found = entry;
    }
    return found;
  }
}

export interface AuthOptions {
  tokens: ApiTokens;
  metrics: Metrics;
  logger: Logger;
  /** Refused tokens from one client address within a minute before it gets 429s (LEASEHOLD_AUTH_FAILURES_PER_MINUTE). */
  failuresPerMinute: number;
  /** How long a locked-out address gets 429s (LEASEHOLD_AUTH_LOCKOUT_S). */
  lockoutSeconds: number;
  /** Audit entries of refusals per token name a minute; the rest are counted in the next one. */
  refusalsAuditedPerMinute?: number;
  /** Milliseconds since the epoch; tests move it instead of waiting. */
  now?: () => number;
  /** Writes an audit entry on its own (a refusal changes nothing it could share a transaction with). */
  audit: (actor: AuditActor, record: AuditRecord) => Promise<void>;
}

const principals = new WeakMap<FastifyRequest, Principal>();

/** The token a /v1 request was accepted with (set by the hook before any handler runs). */
export function principalOf(request: FastifyRequest): Principal {
  const principal = principals.get(request);
  if (!principal) throw new Error(`no principal for ${request.method} ${request.routeOptions.url}: the route is outside the /v1 token scope`);
  return principal;
}

/** The audit actor of a request: its token's name and the request id. */
export function actorOf(request: FastifyRequest): AuditActor {
  return { name: principalOf(request).name, requestId: request.id };
}

/**
 * The `onRequest` hook for /v1. With `required` (the route's access, or
 * undefined for an unknown route under /v1, which needs any valid token so
 * a stranger cannot tell routes apart), it accepts the request or throws the
 * answer: 429 while the client address is locked out, 401 for no, unknown
 * or expired tokens, 403 naming the role needed (or a token for every
 * tenant, on a fleet-wide route).
 */
export function bearerAuth(options: AuthOptions) {
  const now = options.now ?? Date.now;
  const limiter = new FailureLimiter({ perMinute: options.failuresPerMinute, lockoutMs: options.lockoutSeconds * 1000, now });
  const sampler = new RefusalSampler({ perMinute: options.refusalsAuditedPerMinute ?? 10, now });
  const { metrics, logger } = options;

  const record = (name: string, request: FastifyRequest, action: AuditAction, target: string | null, detail: Record<string, unknown>) => {
    const admitted = action === AuditAction.authLocked ? { suppressed: 0 } : sampler.admit(name);
    if (!admitted) return Promise.resolve();
    const route = request.routeOptions.url ?? null;
    return options
      .audit(
        { name, requestId: request.id },
        { action, target, detail: { ...detail, method: request.method, route, ...(admitted.suppressed > 0 ? { notRecorded: admitted.suppressed } : {}) } },
      )
      .catch((error: unknown) => logger.warn({ event: 'audit.write_failed', action, error: (error as Error)?.message }, 'audit entry not written'));
  };

  const refuse = async (request: FastifyRequest, name: string, reason: 'unauthorized' | 'expired', message: string): Promise<never> => {
    metrics.authRefused.inc({ reason });
    const lockedNow = limiter.fail(request.ip);
    await record(name, request, AuditAction.authRefused, null, { reason });
    if (lockedNow) {
      metrics.authLockouts.inc();
      logger.warn({ event: 'auth.locked', lockoutSeconds: options.lockoutSeconds }, 'client address locked out after refused tokens');
      // The address is the target: who is guessing matters more here than which token.
      await record('unknown', request, AuditAction.authLocked, request.ip, { failuresPerMinute: options.failuresPerMinute, lockoutSeconds: options.lockoutSeconds });
    }
    throw new ApiError(401, reason === 'expired' ? 'token_expired' : 'unauthorized', message);
  };

  return async (request: FastifyRequest, reply: FastifyReply, required: RouteAccess | undefined): Promise<Principal> => {
    const retryAfter = limiter.lockedForSeconds(request.ip);
    if (retryAfter > 0) {
      metrics.authRefused.inc({ reason: 'locked' });
      reply.header('retry-after', String(retryAfter));
      throw new ApiError(429, 'too_many_failures', `too many refused tokens from this address; try again in ${retryAfter} s`);
    }
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length === 0) {
      return refuse(request, 'unknown', 'unauthorized', 'missing Authorization: Bearer <token> header');
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    const entry = match ? options.tokens.find(match[1]!) : undefined;
    if (!entry) return refuse(request, 'unknown', 'unauthorized', 'invalid bearer token');
    if (entry.expiresAt && entry.expiresAt.getTime() <= now()) return refuse(request, entry.name, 'expired', `token ${entry.name} expired at ${entry.expiresAt.toISOString()}`);
    const principal: Principal = { name: entry.name, role: entry.role, tenants: entry.tenants };
    if (required) {
      let refusal: string | undefined;
      if (!roleAllows(entry.role, required.role)) refusal = `this call needs the ${required.role} role; token ${entry.name} has ${entry.role}`;
      else if (required.scope === 'fleet' && entry.tenants !== null) refusal = `this call reaches every tenant; token ${entry.name} is limited to tenants ${entry.tenants.join(', ')}`;
      if (refusal) {
        metrics.authRefused.inc({ reason: 'forbidden' });
        await record(entry.name, request, AuditAction.authRefused, null, { reason: 'forbidden', needs: required.role, has: entry.role });
        throw new ApiError(403, 'forbidden', refusal);
      }
    }
    principals.set(request, principal);
    return principal;
  };
}
