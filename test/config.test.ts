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

  it.each(['information_schema', 'pg_catalog', 'pg_temp', 'pg_temp_3', 'pg_toast', 'pg_leasehold'])(
    'refuses the PostgreSQL system schema name %s for LEASEHOLD_SCHEMA',
    (name) => {
      expect(() => loadConfig({ LEASEHOLD_SCHEMA: name })).toThrow(ConfigError);
      expect(() => loadConfig({ LEASEHOLD_SCHEMA: name })).toThrow(
        'LEASEHOLD_SCHEMA: must not be a PostgreSQL system schema (pg_* or information_schema)',
      );
    },
  );

  it('accepts schema names that merely contain a reserved word', () => {
    expect(loadConfig({ LEASEHOLD_SCHEMA: 'app_pg_holds' }).schema).toBe('app_pg_holds');
    expect(loadConfig({ LEASEHOLD_SCHEMA: 'information_schema_copy' }).schema).toBe('information_schema_copy');
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 8787, databaseUrl: undefined });
  });
});
