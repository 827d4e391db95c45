import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../../src/errors.js';
import { createHoldSchema, validateCreateHold } from '../../src/model/hold-input.js';
import { describeZodError, didYouMean, editDistance, knownKeys, zodValidationError } from '../../src/model/zod-issues.js';

/** zod's own English, which must never reach a caller. */
const RAW_ZOD = /Invalid input|Invalid option|expected .* received|received undefined|Too (big|small)|Unrecognized key|Invalid (string|key|value)/;

function said(schema: z.ZodType, input: unknown, withContext = true): string {
  const parsed = schema.safeParse(input);
  if (parsed.success) throw new Error(`accepted ${JSON.stringify(input)}`);
  return zodValidationError(parsed.error, withContext ? { schema, input } : {}).message;
}

describe('zod issues in our words', () => {
  const body = z
    .object({
      customerEmail: z.string('must be a string'),
      ttlSeconds: z.number().int().min(1).max(60).optional(),
      kind: z.enum(['a', 'b']).optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
      tags: z.array(z.string()).min(1).optional(),
      note: z.string().max(3).optional(),
      at: z.union([z.string(), z.number()]).optional(),
      nested: z.object({ inner: z.boolean() }).strict().optional(),
    })
    .strict();

  it('a missing field is required, even where the schema words its type', () => {
    expect(said(body, {})).toBe('customerEmail: required');
    expect(said(body, { customerEmail: 'a@b.example', nested: {} })).toBe('nested.inner: required');
  });

  it('without the input, zod\'s default "received undefined" still reads as required', () => {
    expect(said(z.object({ a: z.string() }), {}, false)).toBe('a: required');
  });

  it('an unknown field comes first and names the field it resembles', () => {
    expect(said(body, { customer_email: 'a@b.example' })).toBe('customer_email: unknown field; did you mean customerEmail?');
    expect(said(body, { customerEmail: 'a@b.example', ttl_seconds: 5 })).toBe('ttl_seconds: unknown field; did you mean ttlSeconds?');
    expect(said(body, { customerEmail: 'a@b.example', tllSeconds: 5 })).toBe('tllSeconds: unknown field; did you mean ttlSeconds?');
    expect(said(body, { customerEmail: 'a@b.example', zzz: 1 })).toBe('zzz: unknown field');
    expect(said(body, { customerEmail: 'a@b.example', nested: { Inner: true } })).toBe('nested.Inner: unknown field; did you mean inner?');
  });

  it("zod's defaults become our wording", () => {
    const ok = { customerEmail: 'a@b.example' };
    expect(said(body, { ...ok, metadata: [] })).toBe('metadata: must be an object');
    expect(said(body, { customerEmail: 5 })).toBe('customerEmail: must be a string');
    expect(said(body, { ...ok, ttlSeconds: 1.5 })).toBe('ttlSeconds: must be an integer');
    expect(said(body, { ...ok, ttlSeconds: '5' })).toBe('ttlSeconds: must be a number');
    expect(said(body, { ...ok, ttlSeconds: 0 })).toBe('ttlSeconds: must be at least 1');
    expect(said(body, { ...ok, ttlSeconds: 61 })).toBe('ttlSeconds: must be at most 60');
    expect(said(body, { ...ok, kind: 'c' })).toBe('kind: must be one of a, b');
    expect(said(body, { ...ok, tags: [] })).toBe('tags: must be at least 1 item');
    expect(said(body, { ...ok, tags: [1] })).toBe('tags.0: must be a string');
    expect(said(body, { ...ok, note: 'long' })).toBe('note: must be at most 3 characters');
    expect(said(body, { ...ok, at: [] })).toBe('at: must be a string or a number');
    expect(said(body, { ...ok, nested: { inner: 'yes' } })).toBe('nested.inner: must be true or false');
    expect(said(body, [])).toBe('body: must be an object');
    expect(said(z.literal('x'), 'y')).toBe('body: must be x');
    expect(said(z.string().email(), 'nope')).toBe('body: must be an email address');
  });

  it('a record key: its rule\'s own message as is, zod\'s reworded', () => {
    const own = z.record(z.string().refine((k) => k !== 'Bcc', 'is set by leasehold itself'), z.string());
    expect(said(z.object({ headers: own }), { headers: { Bcc: 'x' } })).toBe('headers.Bcc: is set by leasehold itself');
    expect(said(z.object({ headers: z.record(z.string().max(2), z.string()) }), { headers: { long: 'x' } })).toBe('headers.long: key must be at most 2 characters');
  });

  it('a message the schema sets is kept', () => {
    const own = z.object({ n: z.number('must be a count').min(2, 'must be two or more'), s: z.string().refine(() => false, 'is wrong') });
    expect(said(own, { n: 'x', s: 'a' })).toBe('n: must be a count');
    expect(said(own, { n: 1, s: 'a' })).toBe('n: must be two or more');
    expect(said(own, { n: 2, s: 'a' })).toBe('s: is wrong');
  });

  it('no zod English for a spread of bad values against the create-hold rules', () => {
    const bad: unknown[] = [undefined, null, [], 'x', 5, { customerEmail: [] }, { customerEmail: 'a@b.example', metadata: [] },
      { customerEmail: 'a@b.example', ttlSeconds: 'x' }, { customerEmail: 'a@b.example', ttlSeconds: 1.5 }, { customerEmail: 'a@b.example', expiresAt: 5 },
      { customerEmail: 'a@b.example', tenant: 5 }, { customerEmail: 'a@b.example', notifyOnConfirm: 'yes' }, { customerEmail: 'a@b.example', remindBeforeSeconds: [] }];
    for (const input of bad) {
      let message = '';
      try {
        validateCreateHold(input);
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        message = (error as Error).message;
      }
      expect(message, JSON.stringify(input)).not.toBe('');
      expect(message, JSON.stringify(input)).not.toMatch(RAW_ZOD);
    }
  });

  it('create-hold: both mistakes at once name the unknown field', () => {
    const parsed = createHoldSchema().safeParse({ customer_email: 'a@b.example', ttl_seconds: 60 });
    expect(parsed.success).toBe(false);
    expect(describeZodError(parsed.error!, { schema: createHoldSchema(), input: { customer_email: 'a@b.example', ttl_seconds: 60 } })).toEqual({
      path: ['customer_email'],
      message: 'unknown field; did you mean customerEmail?',
    });
  });
});

describe('did you mean', () => {
  it('matches case and separators first, then a few edits, then address synonyms', () => {
    expect(didYouMean('customer_email', ['id', 'customerEmail'])).toBe('customerEmail');
    expect(didYouMean('CUSTOMEREMAIL', ['customerEmail'])).toBe('customerEmail');
    expect(didYouMean('customerEmial', ['customerEmail'])).toBe('customerEmail');
    expect(didYouMean('email', ['address', 'detail'])).toBe('address');
    expect(didYouMean('customerEmail', ['address', 'tenant'])).toBe('address');
    expect(didYouMean('to', ['id'])).toBeUndefined();
    expect(didYouMean('colour', ['tenant', 'metadata'])).toBeUndefined();
  });

  it('does not suggest a field that was given', () => {
    expect(didYouMean('customer_email', ['customerEmail'], new Set(['customerEmail']))).toBeUndefined();
  });

  it('finds the fields through wrappers and nesting', () => {
    const schema = z.object({ a: z.object({ b: z.string(), c: z.number() }).optional(), list: z.array(z.object({ d: z.string() })) }).optional();
    expect(knownKeys(schema, [])).toEqual(['a', 'list']);
    expect(knownKeys(schema, ['a'])).toEqual(['b', 'c']);
    expect(knownKeys(schema, ['list', 0])).toEqual(['d']);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('a number past 2^53 is too large, not "not whole"', () => {
  it("says the field's own bound where it has one, else the largest safe integer", () => {
    const seconds = z.number().int('must be a whole number of seconds').min(1, 'must be at least 1').max(2592000, 'must be at most 2592000 (30 days)');
    expect(said(seconds, 1e20)).toBe('body: must be at most 2592000 (30 days)');
    expect(said(seconds, 3e6)).toBe('body: must be at most 2592000 (30 days)');
    expect(said(seconds, -1e20)).toBe('body: must be at least 1');
    expect(said(seconds, 1.5)).toBe('body: must be a whole number of seconds');
    const unbounded = z.number().int('must be a whole number of emails');
    expect(said(unbounded, 1e20)).toBe('body: must be at most 9007199254740991');
    expect(said(unbounded, -1e20)).toBe('body: must be at least -9007199254740991');
    expect(said(unbounded, 2.5)).toBe('body: must be a whole number of emails');
  });

  it('every whole-seconds field of a hold says so for 1e20', () => {
    for (const field of ['ttlSeconds', 'remindBeforeSeconds']) {
      const input = { customerEmail: 'a@b.example', ttlSeconds: 60, [field]: 1e20 };
      expect(() => validateCreateHold(input)).toThrow(`${field}: must be at most 2592000 (30 days)`);
    }
  });
});
