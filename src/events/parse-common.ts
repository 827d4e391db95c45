import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { redactAddresses } from '../providers/provider-common.js';
import { looksLikeAddress, normalizeAddress } from '../model/address.js';
import type { ProviderEvent } from '../model/event-kinds.js';

/**
 * Helpers the provider payload parsers share. A parser is pure: JSON in,
 * events out, or a ValidationError naming the field (the webhook answers
 * 400). Nothing a client sends may reach the database in a shape it refuses
 * (NUL bytes, dates out of range), so values are checked here.
 */

export interface ParsedEvents {
  events: ProviderEvent[];
  /** The provider's event type, when it is one leasehold does not store (opens, clicks, ...). */
  ignored: string | null;
}

export const ignored = (type: string): ParsedEvents => ({ events: [], ignored: type.slice(0, 100) });

export function object(value: unknown, field: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ValidationError(field, 'must be a JSON object');
  return value as Record<string, unknown>;
}

export function optionalObject(value: unknown, field: string): Record<string, unknown> | undefined {
  return value === undefined || value === null ? undefined : object(value, field);
}

const CONTROL = /[\u0000-\u001f\u007f]/;

/** An identifier: 1-500 printable characters. */
export function id(value: unknown, field: string): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value !== 'string' || value.length === 0 || value.length > 500 || CONTROL.test(value)) {
    throw new ValidationError(field, 'must be an identifier (1-500 printable characters)');
  }
  return value;
}

export function string(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  return value;
}

export function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** A provider timestamp, within years the database and common sense accept. */
export function timestamp(value: unknown, field: string): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1970 || date.getUTCFullYear() > 9999) {
    throw new ValidationError(field, 'must be an ISO 8601 timestamp');
  }
  return date;
}

/** Diagnostic text as stored: addresses redacted, control characters dropped, at most 1000 characters. */
export function reason(...parts: unknown[]): string | null {
  const text = parts
    .flat()
    .filter((p): p is string => typeof p === 'string' && p.trim().length > 0)
    .join('; ');
  if (!text) return null;
  return redactAddresses(text.replace(/[\u0000-\u001f\u007f]+/g, ' ')).trim().slice(0, 1000);
}

/** The provider's name for an event, e.g. `Bounce/Permanent/General`; printable, at most 200 characters. */
export function label(...parts: Array<string | undefined>): string | null {
  const text = parts.filter((p): p is string => typeof p === 'string' && p.length > 0).join('/');
  return text ? text.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 200) : null;
}

/** A stable event id where the provider gives none: the same event sent twice hashes the same. */
export function derivedEventId(...parts: Array<string | number | undefined | null>): string {
  return 'sha256:' + createHash('sha256').update(JSON.stringify(parts.map((p) => p ?? null))).digest('hex');
}

/**
 * Addresses out of a provider field (a string, `Name <a@b>`, an array of
 * those, or objects with an address field), normalised. Anything that does
 * not look like an address is left out: it can only serve suppression.
 */
export function addresses(value: unknown, key?: string): string[] {
  const out: string[] = [];
  const visit = (v: unknown) => {
    if (typeof v === 'string') {
      const inner = /<([^<>]+)>\s*$/.exec(v)?.[1] ?? v;
      const address = normalizeAddress(inner);
      if (looksLikeAddress(address)) out.push(address);
    } else if (Array.isArray(v)) {
      for (const item of v.slice(0, 50)) visit(item);
    } else if (key && v && typeof v === 'object') {
      visit((v as Record<string, unknown>)[key]);
    }
  };
  visit(value);
  return [...new Set(out)];
}
