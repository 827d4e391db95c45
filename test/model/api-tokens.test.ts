import { describe, expect, it } from 'vitest';
import { parseTokensFile, roleAllows, tenantAllowed, tokenHash, tokenProblem } from '../../src/model/api-tokens.js';

const HASH = tokenHash('oncall-token-0123456789');

describe('the tokens file', () => {
  it('reads named tokens with roles, tenants and an expiry, holding only hashes', () => {
    const entries = parseTokensFile(`tokens:
  - { name: oncall, role: operate, sha256: ${HASH} }
  - { name: acme-app, role: operate, tenants: [acme], expiresAt: 2027-06-30T00:00:00Z, sha256: ${tokenHash('acme-token-0123456789')} }
  - { name: viewer, role: read, sha256: ${tokenHash('viewer-token-0123456789').toUpperCase()} }
`);
    expect(entries.map((e) => [e.name, e.role, e.tenants, e.expiresAt?.toISOString() ?? null])).toEqual([
      ['oncall', 'operate', null, null],
      ['acme-app', 'operate', ['acme'], '2027-06-30T00:00:00.000Z'],
      ['viewer', 'read', null, null],
    ]);
    expect(entries[0]!.sha256.toString('hex')).toBe(HASH);
    expect(entries[2]!.sha256.toString('hex')).toBe(tokenHash('viewer-token-0123456789'));
  });

  it.each([
    ['tokens: nope', 'LEASEHOLD_API_TOKENS_FILE: tokens: must be a list of tokens'],
    ['tokens: [', /not valid YAML/],
    ['token: []', 'LEASEHOLD_API_TOKENS_FILE: token: is not a field of the tokens file'],
    [`tokens:\n  - { name: Bad Name, role: read, sha256: ${HASH} }`, 'tokens[0].name: must be lowercase'],
    [`tokens:\n  - { name: ok, role: root, sha256: ${HASH} }`, 'tokens[0] (ok).role: must be one of read, operate, admin'],
    ['tokens:\n  - { name: ok, role: read, sha256: hunter2 }', 'tokens[0] (ok).sha256: must be the 64 hex digits'],
    [`tokens:\n  - { name: ok, role: read, sha256: ${HASH}, token: x }`, 'tokens[0] (ok).token: is not a field of a token'],
    [`tokens:\n  - { name: ok, role: read, sha256: ${HASH}, expiresAt: next year }`, 'tokens[0] (ok).expiresAt: must be an ISO 8601 time'],
    [`tokens:\n  - { name: ok, role: read, sha256: ${HASH}, tenants: [] }`, 'tokens[0] (ok).tenants: must be a non-empty list'],
    [`tokens:\n  - { name: ok, role: read, sha256: ${HASH}, tenants: ['no spaces'] }`, 'tokens[0] (ok).tenants[0]: must be a tenant'],
    [`tokens:\n  - { name: a, role: read, sha256: ${HASH} }\n  - { name: a, role: read, sha256: ${tokenHash('x'.repeat(20))} }`, 'tokens[1] (a).name: is named twice'],
    [`tokens:\n  - { name: a, role: read, sha256: ${HASH} }\n  - { name: b, role: read, sha256: ${HASH} }`, 'tokens[1] (b).sha256: is the hash of another entry too'],
    [`tokens:\n  - { name: env, role: read, sha256: ${HASH} }`, `tokens[0] (env).name: "env" is LEASEHOLD_API_TOKEN's name`],
  ])('refuses a broken file in one line naming the entry and the field: %s', (text, message) => {
    let error: Error | undefined;
    try {
      parseTokensFile(text);
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message.split('\n')).toHaveLength(1);
    expect(error?.message).toMatch(typeof message === 'string' ? new RegExp(message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : message);
    expect(error?.message).not.toContain('oncall-token');
  });

  it('orders the roles: admin covers operate covers read', () => {
    expect([roleAllows('read', 'read'), roleAllows('read', 'operate'), roleAllows('operate', 'read'), roleAllows('operate', 'admin'), roleAllows('admin', 'operate')]).toEqual([
      true,
      false,
      true,
      false,
      true,
    ]);
    expect([tenantAllowed({ tenants: null }, 'x'), tenantAllowed({ tenants: ['acme'] }, 'acme'), tenantAllowed({ tenants: ['acme'] }, '')]).toEqual([true, true, false]);
  });

  it('hashes what `leasehold tokens hash` prints, and holds tokens to the Bearer rule', () => {
    expect(tokenHash('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(tokenProblem('short')).toMatch(/16/);
    expect(tokenProblem('has a space in it, long enough')).toMatch(/whitespace/);
    expect(tokenProblem('fine-token-0123456789')).toBeUndefined();
  });
});
