import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { mergeInput, nest, parseWorkload } from '../../src/capacity/input.js';
import { parsePrices } from '../../src/capacity/prices.js';
import { ValidationError } from '../../src/errors.js';
import { defaults, examplePath, pricesPath } from '../helpers/capacity.js';

const fileText = `
volume:
  emailsPerDay: 20000
  expiredShare: 0.4
burst:
  holds: 5000
  windowSeconds: 30
provider:
  name: ses
  perSecond: 14
  burst: 14
`;

function fieldError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  throw new Error('expected a ValidationError');
}

describe('workload from YAML and flags', () => {
  it('flags override the file field by field; the rest of each section stays', () => {
    const merged = mergeInput(parse(fileText), nest({ 'provider.perSecond': '50', 'burst.holds': '800' }));
    const w = parseWorkload(merged, defaults);
    expect(w.provider).toMatchObject({ name: 'ses', perSecond: 50, burst: 14 });
    expect(w.burst).toEqual({ holds: 800, windowSeconds: 30 });
    expect(w.volume).toEqual({ emailsPerDay: 20_000, expiredShare: 0.4 });
  });

  it('what neither gives comes from the configuration, then from the model', () => {
    const w = parseWorkload(nest({ 'volume.emailsPerDay': '100' }), { ...defaults, perSecond: 7, burst: 3, promiseSeconds: 120, deliveryConcurrency: 16 });
    expect(w.provider).toMatchObject({ name: 'sandbox', perSecond: 7, burst: 3, latencyMs: 200 });
    expect(w.provider.dailyQuota).toBeUndefined();
    expect(w.promiseSeconds).toBe(120);
    expect(w.deployment).toMatchObject({ workers: 2, deliveryConcurrency: 16, attemptsPerEmail: 1 });
    expect(w).toMatchObject({ holdWindowSeconds: 1200, retentionDays: 30, freeTiers: false, burst: { holds: 0, windowSeconds: 0 } });
  });

  it('flags alone are enough, and --free-tiers is a switch', () => {
    const w = parseWorkload(mergeInput(undefined, nest({ 'volume.emailsPerDay': '5', freeTiers: true })), defaults);
    expect(w.freeTiers).toBe(true);
  });

  it('the example workload and the price table in the repository validate', () => {
    const w = parseWorkload(parse(readFileSync(examplePath, 'utf8')), defaults);
    expect(w.volume.emailsPerDay).toBeGreaterThan(0);
    const table = parsePrices(parse(readFileSync(pricesPath, 'utf8')));
    for (const price of Object.values(table.prices)) {
      expect(price.source).toMatch(/^https:\/\//);
      expect(price.taken).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    expect(table.warning).toMatch(/[Cc]heck/);
  });

  it.each([
    [{}, 'volume.emailsPerDay (--emails-per-day)'],
    [{ volume: { emailsPerDay: 'lots' } }, 'volume.emailsPerDay (--emails-per-day)'],
    [{ volume: { emailsPerDay: '' } }, 'volume.emailsPerDay (--emails-per-day)'],
    [{ volume: { emailsPerDay: -1 } }, 'volume.emailsPerDay (--emails-per-day)'],
    [{ volume: { emailsPerDay: 1, expiredShare: 0 } }, 'volume.expiredShare (--expired-share)'],
    [{ volume: { emailsPerDay: 1 }, burst: { holds: 2.5 } }, 'burst.holds (--burst-holds)'],
    [{ volume: { emailsPerDay: 1 }, provider: { name: 'gmail' } }, 'provider.name (--provider)'],
    [{ volume: { emailsPerDay: 1 }, provider: { perSecond: 0 } }, 'provider.perSecond (--per-second)'],
    [{ volume: { emailsPerDay: 1 }, freeTiers: 'yes' }, 'freeTiers (--free-tiers)'],
    [{ volume: { emailsPerDay: 1, emailPerDay: 2 } }, 'volume.emailPerDay'],
    [{ volume: { emailPerDay: 2 } }, 'volume.emailPerDay'],
    [{ volume: { emailsPerDay: 1 }, bursts: {} }, 'bursts'],
  ])('%j is refused naming %s', (raw, field) => {
    expect(fieldError(() => parseWorkload(raw, defaults))).toBe(field);
  });

  it('a file that is not a mapping is refused', () => {
    expect(fieldError(() => mergeInput([1, 2], {}))).toBe('workload');
  });

  it('a price without its source is refused naming it', () => {
    const raw = parse(readFileSync(pricesPath, 'utf8'));
    delete raw.prices.sqs_request.source;
    expect(fieldError(() => parsePrices(raw))).toBe('price table prices.sqs_request.source');
    raw.prices.sqs_request.source = 'somewhere';
    expect(fieldError(() => parsePrices(raw))).toBe('price table prices.sqs_request.source');
  });
});
