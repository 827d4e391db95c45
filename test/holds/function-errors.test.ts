import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { holdFunctionError, isoFromPostgres } from '../../src/holds/function-errors.js';

const notLater = (printed: string) => ({
  code: '22023',
  message: `expires_at: must be after the hold's current expires_at (${printed})`,
  column: 'expires_at',
});

describe("extend_hold_'s refusal of an earlier deadline, as the caller asked", () => {
  it('names ttlSeconds when the extension was asked in seconds, with the time in ISO 8601', () => {
    const error = holdFunctionError(notLater('2026-12-03 10:52:06.144713+00'), 'ttlSeconds');
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: 'ttlSeconds' });
    expect(error!.message).toBe("ttlSeconds: must reach past the hold's current expiresAt (2026-12-03T10:52:06.144Z): extending only moves a hold later");
  });

  it('names expiresAt when a deadline was asked for (and by default)', () => {
    for (const error of [holdFunctionError(notLater('2026-12-03 10:52:06+00'), 'expiresAt'), holdFunctionError(notLater('2026-12-03 10:52:06+00'))]) {
      expect(error).toMatchObject({ field: 'expiresAt', message: "expiresAt: must be after the hold's current expiresAt (2026-12-03T10:52:06.000Z)" });
      expect(error!.message).not.toContain('expires_at');
    }
  });

  it('reads the time in any session time zone, and keeps text it cannot read', () => {
    expect(isoFromPostgres('2026-12-03 16:22:06.5+05:30')).toBe('2026-12-03T10:52:06.500Z');
    expect(isoFromPostgres('2026-12-03 05:52:06-05')).toBe('2026-12-03T10:52:06.000Z');
    expect(isoFromPostgres('Thu Dec 03 10:52:06 2026 UTC')).toBeUndefined();
    expect(holdFunctionError(notLater('Thu Dec 03 10:52:06 2026 UTC'), 'expiresAt')!.message).toContain('(Thu Dec 03 10:52:06 2026 UTC)');
  });

  it('leaves the other refusals as they were', () => {
    expect(holdFunctionError({ code: '22023', message: 'ttl_seconds: must be 1-2592000 (30 days)', column: 'ttl_seconds' }, 'ttlSeconds')).toMatchObject({
      field: 'ttlSeconds',
      message: 'ttlSeconds: must be 1-2592000 (30 days)',
    });
  });
});
