import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';

/**
 * How a recipient is keyed on the suppression list: the hex SHA-256 of the
 * trimmed, lower-cased address. Providers report addresses in whatever case
 * the message was sent with, and local parts are case-insensitive in
 * practice, so `Ana@Example.com` and `ana@example.com` are one recipient.
 * The hash (not the address) is what the delivery lane compares, so erasure
 * can remove the address and the suppression still holds.
 */
export function normalizeAddress(address: string): string {
  if (typeof address !== 'string') throw new ValidationError('address', address === undefined ? 'required' : 'must be a string');
  return address.trim().toLowerCase();
}

export function addressHash(address: string): string {
  return createHash('sha256').update(normalizeAddress(address), 'utf8').digest('hex');
}

export const ADDRESS_HASH_PATTERN = /^[0-9a-f]{64}$/;

const ADDRESS_PATTERN = /^[^\s@<>"(),;:\\[\]\x00-\x1f\x7f]+@[^\s@<>"(),;:\\[\]\x00-\x1f\x7f]+$/;

/** A plausible single normalised address: something@domain, no spaces or control characters, at most 320 characters. */
export function looksLikeAddress(address: string): boolean {
  return address.length > 0 && address.length <= 320 && ADDRESS_PATTERN.test(address);
}

export function validateAddress(value: unknown, field = 'address'): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  const address = normalizeAddress(value);
  if (!looksLikeAddress(address)) {
    throw new ValidationError(field, 'must be an email address such as ana@example.com');
  }
  return address;
}

/**
 * What an operator names a suppression by: an address, or the address hash
 * (the only handle left once erasure removed the address).
 */
export function suppressionKey(value: string, field = 'address'): string {
  const trimmed = value.trim().toLowerCase();
  if (ADDRESS_HASH_PATTERN.test(trimmed)) return trimmed;
  return addressHash(validateAddress(value, field));
}

/**
 * A sender or reply-to header value: `Name <address>` or a bare address, at
 * most 320 characters, on one line (a CR or LF would inject a header). The
 * one rule for template meta (`from`, `replyTo`) and tenant policies, and
 * mirrored by the CHECKs of migration 0021.
 */
export const SENDER_PATTERN = /^(?:[^<>\r\n]{0,200}<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/;
export const MAX_SENDER_LENGTH = 320;
export const SENDER_RULE = 'must be an address or "Name <address>"';

export function isSender(value: string): boolean {
  return value.length <= MAX_SENDER_LENGTH && SENDER_PATTERN.test(value);
}
