/**
 * Small pure helpers shared by the real provider adapters: reading retry
 * timing from headers, telling "the request never left" from "the request
 * may have arrived", and making tag values every provider accepts.
 */

/**
 * Socket errors raised before a single byte of the request was written: the
 * provider cannot have the message, so a retry can never duplicate it.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);

/** The first `code` found on an error or its `cause` chain (undici hides socket codes in `cause`). */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** True when the request provably never reached the provider (connection refused, DNS failure). */
export function neverSent(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export function isAbortError(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const name = (error as { name?: unknown }).name;
  return name === 'AbortError' || name === 'TimeoutError' || errorCode(error) === 'ABORT_ERR';
}

/**
 * A delay in seconds (`Retry-After: 3`, `RateLimit-Reset: 3`) or an HTTP
 * date (`Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`) as milliseconds from
 * `now`; undefined when absent or unreadable.
 */
export function headerDelayMs(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now.getTime());
}

/** Milliseconds until the next 00:00 UTC (when calendar-day quotas reset). */
export function msUntilNextUtcMidnight(now: Date): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return next - now.getTime();
}

/**
 * Resend and SES accept tag values of ASCII letters, digits, `_` and `-`
 * only (max 256): intent ids contain `:`, so other characters become `_`.
 * The exact id always travels in the X-Leasehold-Intent-Id header too.
 */
export function tagSafe(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 256);
}

/** Lower-cased header lookup over a plain record. */
export function headerOf(headers: Record<string, string> | null | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/**
 * Provider error texts often quote the address ("Found inactive addresses:
 * a@b.com", "550 5.1.1 <a@b.com>: Recipient address rejected"). Reasons
 * end up in logs and in the attempts table, where no address may appear, so
 * every address-looking token is replaced.
 */
export function redactAddresses(text: string): string {
  // A sentence's full stop after an address is kept.
  return text.replace(/[^\s<>"'(),;:[\]]+@[^\s<>"'(),;:[\]]+/g, (match) => (match.endsWith('.') ? '<address>.' : '<address>'));
}
