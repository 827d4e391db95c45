import { describe, expect, it } from 'vitest';
import { addressHash, normalizeAddress, sendableAddress } from '../../src/model/address.js';
import { validateCreateHold } from '../../src/model/hold-input.js';
import { validateErasureAddress } from '../../src/retention/policy.js';

describe('a customer address as leasehold stores and sends it', () => {
  it('keeps an ASCII address as given', () => {
    expect(sendableAddress('Ana.Lopez+slot@Example.com')).toEqual({ address: 'Ana.Lopez+slot@Example.com' });
    expect(sendableAddress('ana@xn--bcher-kva.de')).toEqual({ address: 'ana@xn--bcher-kva.de' });
  });

  it('takes an internationalized domain and keeps it as punycode, the form every provider accepts', () => {
    expect(sendableAddress('ana@bücher.de')).toEqual({ address: 'ana@xn--bcher-kva.de' });
    expect(sendableAddress('ana@BÜCHER.de')).toEqual({ address: 'ana@xn--bcher-kva.de' });
    // An internationalized top-level domain is punycode too (.рф).
    expect(sendableAddress('ivan@пример.рф')).toEqual({ address: 'ivan@xn--e1afmkfd.xn--p1ai' });
  });

  it('refuses a local part outside ASCII, saying why', () => {
    const refused = sendableAddress('josé@example.com');
    expect(refused).toEqual({ problem: expect.stringMatching(/ASCII local part .*SES and Postmark .*SMTPUTF8, RFC 6531/) });
    expect(sendableAddress('用户@例子.广告')).toEqual(refused);
  });

  it('refuses what is no address, an invalid domain included', () => {
    for (const bad of ['not an address', 'ana@', '@example.com', 'ana@ü..de', 'ana@exa mple.com', 'ana@example', 'a..b@example.com']) {
      expect(sendableAddress(bad), bad).toEqual({ problem: 'must be an email address' });
    }
    // 92 characters as given, 290 as sent: the limit is on the form sent.
    const label = (k: number) => Array.from({ length: 14 }, (_, i) => String.fromCharCode(0x4e00 + k * 97 + i * 13)).join('');
    const long = `${'a'.repeat(80)}@${[0, 1, 2, 3, 4, 5].map(label).join('.')}.de`;
    expect(long.length).toBeLessThan(254);
    expect(sendableAddress(long)).toEqual({
      problem: expect.stringContaining('at most 254 characters'),
    });
  });

  it('is the rule of a hold: stored as punycode, and the same request whichever form it came in', () => {
    const unicode = validateCreateHold({ id: 'h1', customerEmail: 'ana@bücher.de', ttlSeconds: 60 });
    const ascii = validateCreateHold({ id: 'h1', customerEmail: 'ana@xn--bcher-kva.de', ttlSeconds: 60 });
    expect(unicode.customerEmail).toBe('ana@xn--bcher-kva.de');
    expect(unicode.requestHash).toBe(ascii.requestHash);
    expect(() => validateCreateHold({ customerEmail: 'josé@example.com', ttlSeconds: 60 })).toThrow(/customerEmail: must have an ASCII local part/);
  });

  it('keys suppressions and erasure by the same form', () => {
    expect(normalizeAddress(' Ana@Bücher.de ')).toBe('ana@xn--bcher-kva.de');
    expect(addressHash('ana@bücher.de')).toBe(addressHash('ANA@xn--bcher-kva.de'));
    expect(validateErasureAddress('Ana@Bücher.de')).toBe('ana@xn--bcher-kva.de');
    expect(() => validateErasureAddress('josé@example.com')).toThrow(/ASCII local part/);
  });
});
