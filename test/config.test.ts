import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: undefined,
      dataDir: './.leasehold',
      schema: 'leasehold',
      port: 8787,
      emailProvider: 'sandbox',
      emailFrom: 'Support <support@example.com>',
      ratePerSecond: 10,
      rateBurst: 10,
      expiryIntervalMs: 1000,
      expiryBatch: 500,
      leaseMs: 30_000,
      deliveryBatch: 50,
      deliveryConcurrency: 8,
      sendTimeoutMs: 10_000,
      maxAttempts: 10,
      expiryPromiseS: 60,
      emailPromiseS: 900,
      templatesDir: undefined,
      defaultLocale: 'en',
      defaultTimeZone: 'UTC',
    });
    expect(config.sendTimeoutMs).toBeLessThan(config.leaseMs);
  });

  it.each([
    ['DATABASE_URL', 'mysql://x', 'postgres://'],
    ['LEASEHOLD_SCHEMA', 'Drop Table', 'identifier'],
    ['PORT', '70000', 'whole number'],
    ['EMAIL_PROVIDER', 'pigeon', 'sandbox'],
    ['LEASEHOLD_RATE_PER_SECOND', '0', 'greater than 0'],
    ['LEASEHOLD_RATE_BURST', '1.5', 'whole number'],
    ['LEASEHOLD_LEASE_MS', 'soon', 'whole number'],
    ['LEASEHOLD_API_TOKEN', 'short', '16'],
    ['LOG_LEVEL', 'loud', 'Invalid option'],
    ['LEASEHOLD_DEFAULT_LOCALE', 'not a locale', 'locale'],
    ['LEASEHOLD_DEFAULT_TIME_ZONE', 'Mars/Olympus_Mons', 'IANA time zone'],
  ])('names %s when it is invalid', (variable, value, fragment) => {
    const error = (() => {
      try {
        loadConfig({ [variable]: value });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as ConfigError).message).toContain(fragment);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 8787, databaseUrl: undefined });
  });
});
