import { createHash } from 'node:crypto';
import { domainToASCII } from 'node:url';
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
  // An internationalized domain is keyed in its ASCII form, the one holds store and providers report.
  return asciiDomain(address.trim()).toLowerCase();
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

// zod's email rule (z.regexes.email, mirrored by create_hold in migrations/), with a top-level domain in punycode allowed too (`.xn--p1ai`, .рф).
const SENDABLE_ADDRESS = /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9-]*\.)+(?:[A-Za-z]{2,}|xn--[A-Za-z0-9-]+)$/;
const MAX_ADDRESS_LENGTH = 254;
// Any character outside ASCII.
const NON_ASCII = /[^\x00-\x7f]/;

/** The address with its domain, when that is internationalized, as punycode (`ana@bücher.de` -> `ana@xn--bcher-kva.de`); '' after the @ when it is no valid domain. */
function asciiDomain(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0 || !NON_ASCII.test(address.slice(at + 1))) return address;
  return `${address.slice(0, at + 1)}${domainToASCII(address.slice(at + 1))}`;
}

/**
 * A customer's address as leasehold stores and sends it, or why it cannot
 * be. An internationalized domain (IDN) is accepted and kept as punycode,
 * the form every provider takes (Amazon SES requires it) and the one
 * bounce and complaint events report it in. A local part outside ASCII
 * (SMTPUTF8, RFC 6531) is refused, saying why: Amazon SES does not support
 * SMTPUTF8 and Postmark refuses such addresses, and a hold does not know
 * which account will send its email.
 */
export function sendableAddress(value: string): { address: string } | { problem: string } {
  const at = value.lastIndexOf('@');
  if (at > 0 && NON_ASCII.test(value.slice(0, at))) {
    return { problem: 'must have an ASCII local part (before the @): Amazon SES and Postmark do not accept internationalized ones (SMTPUTF8, RFC 6531)' };
  }
  const address = asciiDomain(value);
  if (!SENDABLE_ADDRESS.test(address)) return { problem: 'must be an email address' };
  if (address.length > MAX_ADDRESS_LENGTH) return { problem: `must be at most ${MAX_ADDRESS_LENGTH} characters with its domain as punycode` };
  return { address };
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
