import { describe, expect, it } from 'vitest';
import { loadConfig, unknownVariables } from '../src/config.js';
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
      deliveryConcurrency: 100,
      sendTimeoutMs: 10_000,
      maxAttempts: 10,
      expiryPromiseS: 60,
      emailPromiseS: 900,
      host: '127.0.0.1',
      retention: { retentionDays: 30, erasePiiAfterDays: 7, batchSize: 1000, intervalMs: 60_000 },
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
    ['LEASEHOLD_RATE_PER_SECOND', '0', 'from 0.001'],
    ['LEASEHOLD_RATE_BURST', '1.5', 'whole number'],
    ['LEASEHOLD_LEASE_MS', 'soon', 'whole number'],
    ['LEASEHOLD_API_TOKEN', 'short', '16'],
    ['LEASEHOLD_HOST', 'not a host', 'IP address or a host name'],
    ['LEASEHOLD_HOST', 'http://127.0.0.1', 'IP address or a host name'],
    ['LOG_LEVEL', 'loud', 'must be one of fatal, error, warn, info, debug, trace, silent'],
    ['LEASEHOLD_RETENTION_DAYS', '0', 'whole number of days from 1 to 3650, or off (got "0")'],
    ['LEASEHOLD_RETENTION_DAYS', 'a month', 'or off (got "a month")'],
    ['LEASEHOLD_RETENTION_DAYS', '3651', 'from 1 to 3650'],
    ['LEASEHOLD_ERASE_PII_AFTER_DAYS', '1.5', 'whole number of days from 0 to 3650, or off (got "1.5")'],
    ['LEASEHOLD_ERASE_PII_AFTER_DAYS', 'never', 'or off'],
    ['LEASEHOLD_ERASE_PII_AFTER_DAYS', '31', 'must not be more than the retention (30 days)'],
    ['LEASEHOLD_PRUNE_BATCH', '0', 'whole number from 1 to 10000'],
    ['LEASEHOLD_PRUNE_INTERVAL_MS', '10', 'whole number'],
    ['LEASEHOLD_DEFAULT_LOCALE', 'not a locale', 'locale'],
    ['LEASEHOLD_DEFAULT_TIME_ZONE', 'Mars/Olympus_Mons', 'IANA time zone'],
    ['LEASEHOLD_POOL_SIZE', '1', 'whole number from 2 to 1000'],
    ['LEASEHOLD_POOL_SIZE', 'many', 'whole number from 2 to 1000'],
    ['LEASEHOLD_LISTEN', 'yes', 'must be on or off'],
    ['LEASEHOLD_HAND_OFF', 'true', 'must be on or off'],
    ['LEASEHOLD_LISTEN_URL', 'pgbouncer:6432', 'postgres://'],
    ['LEASEHOLD_EXPIRE_HOOK', 'release_slots', 'must be <schema>.<function>'],
    ['LEASEHOLD_EXPIRE_HOOK', 'App.Release_Slots', 'lowercase SQL identifiers'],
    ['LEASEHOLD_EXPIRE_HOOK', 'app.release_slots(text[])', 'must be <schema>.<function>'],
    ['LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS', '0', 'whole number from 10'],
    ['LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS', '20000', 'shorter than LEASEHOLD_DB_QUERY_TIMEOUT_MS'],
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

  it.each([
    ['a space inside', 'token-with a-space-0123456789'],
    ['a trailing newline', 'token-0123456789abcdef\n'],
    ['a leading tab', '\ttoken-0123456789abcdef'],
    ['a carriage return (a Windows env file)', 'token-0123456789abcdef\r'],
    ['a non-ASCII letter', 'tökén-0123456789abcdef'],
  ])('refuses an API token with %s (it could never match a Bearer header), without echoing it', (_what, token) => {
    const error = (() => {
      try {
        loadConfig({ LEASEHOLD_API_TOKEN: token });
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.variable).toBe('LEASEHOLD_API_TOKEN');
    expect(error.message).toMatch(/whitespace/);
    expect(error.message).not.toContain('0123456789');
  });

  it('does not echo a bad DATABASE_URL either (it may carry a password)', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://app:s3cret-pw@db/app' })).toThrow(/^DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL$/);
  });

  it('accepts any printable ASCII token, and chooses the interface from LEASEHOLD_HOST', () => {
    expect(loadConfig({ LEASEHOLD_API_TOKEN: 'Ab0+/=._~-!#$%&*^|`' + 'x'.repeat(8) }).apiToken).toBe('Ab0+/=._~-!#$%&*^|`xxxxxxxx');
    for (const host of ['0.0.0.0', '::', '::1', '10.1.2.3', 'localhost', 'api.internal.example']) {
      expect(loadConfig({ LEASEHOLD_HOST: host }).host).toBe(host);
    }
  });

  it('reads the retention policy: whole days or off, erasure no later than deletion', () => {
    expect(loadConfig({ LEASEHOLD_RETENTION_DAYS: 'off', LEASEHOLD_ERASE_PII_AFTER_DAYS: '400' }).retention).toMatchObject({
      retentionDays: null,
      erasePiiAfterDays: 400,
    });
    expect(loadConfig({ LEASEHOLD_RETENTION_DAYS: '90', LEASEHOLD_ERASE_PII_AFTER_DAYS: 'off' }).retention).toMatchObject({
      retentionDays: 90,
      erasePiiAfterDays: null,
    });
    expect(loadConfig({ LEASEHOLD_RETENTION_DAYS: '7', LEASEHOLD_ERASE_PII_AFTER_DAYS: '0' }).retention).toMatchObject({ retentionDays: 7, erasePiiAfterDays: 0 });
    expect(() => loadConfig({ LEASEHOLD_RETENTION_DAYS: '5' })).toThrow(/LEASEHOLD_ERASE_PII_AFTER_DAYS: must not be more than the retention \(5 days\)/);
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

  it('reads the connection budget and the LISTEN settings for many processes', () => {
    expect(loadConfig({})).toMatchObject({ poolSize: undefined, listen: true, listenUrl: undefined });
    expect(
      loadConfig({ LEASEHOLD_POOL_SIZE: '4', LEASEHOLD_LISTEN: 'off', LEASEHOLD_LISTEN_URL: 'postgres://u:p@db:5432/app' }),
    ).toMatchObject({ poolSize: 4, listen: false, listenUrl: 'postgres://u:p@db:5432/app' });
  });

  it('reads a multi-host DATABASE_URL, and refuses a target_session_attrs leasehold cannot work with, naming it and not the URL', () => {
    const url = 'postgres://app:s3cret@h1:5432,h2:5433/app?target_session_attrs=read-write';
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    for (const variable of ['DATABASE_URL', 'LEASEHOLD_LISTEN_URL']) {
      expect(() => loadConfig({ [variable]: 'postgres://app:s3cret@h1,h2/app?target_session_attrs=prefer-standby' })).toThrow(
        new ConfigError(variable, 'target_session_attrs=prefer-standby is not supported: leasehold writes, so it needs read-write (the server that accepts writes now) or any'),
      );
    }
    expect(() => loadConfig({ DATABASE_URL: 'postgres://app:s3cret@/app?host=h1,h2,h3&port=1,2' })).toThrow(/^DATABASE_URL: port lists 2 ports for 3 hosts/);
  });

  it('reads LEASEHOLD_DB_WAIT_S: seconds, 0, or forever; unset leaves the choice to the command', () => {
    expect(loadConfig({}).dbWaitS).toBeUndefined();
    expect(loadConfig({ LEASEHOLD_DB_WAIT_S: '0' }).dbWaitS).toBe(0);
    expect(loadConfig({ LEASEHOLD_DB_WAIT_S: '120' }).dbWaitS).toBe(120);
    expect(loadConfig({ LEASEHOLD_DB_WAIT_S: 'forever' }).dbWaitS).toBe(Infinity);
    for (const bad of ['-1', '1.5', '10s', 'always']) {
      expect(() => loadConfig({ LEASEHOLD_DB_WAIT_S: bad })).toThrow(
        `LEASEHOLD_DB_WAIT_S: must be a whole number of seconds (0: do not wait) or forever (got ${JSON.stringify(bad)})`,
      );
    }
  });

  it('does not echo a bad LEASEHOLD_LISTEN_URL (it may carry a password)', () => {
    expect(() => loadConfig({ LEASEHOLD_LISTEN_URL: 'mysql://u:secret@db' })).toThrow(ConfigError);
    try {
      loadConfig({ LEASEHOLD_LISTEN_URL: 'mysql://u:secret@db' });
    } catch (error) {
      expect((error as Error).message).not.toContain('secret');
    }
  });
});

describe('unknown LEASEHOLD_* variables', () => {
  it('are named, with the setting a typo was probably meant for; known ones and other prefixes are not', () => {
    expect(
      unknownVariables({
        LEASEHOLD_RATE_PER_SECOND: '5',
        LEASEHOLD_RATE_PER_SECCOND: '5',
        LEASEHOLD_SOMETHING_ELSE_ENTIRELY: 'x',
        LEASEHOLD_TEST_DATABASE_URL: 'postgres://x',
        PORT: '1',
        DATABASE_URL: 'postgres://x',
      }),
    ).toEqual([
      { name: 'LEASEHOLD_RATE_PER_SECCOND', didYouMean: 'LEASEHOLD_RATE_PER_SECOND' },
      { name: 'LEASEHOLD_SOMETHING_ELSE_ENTIRELY' },
    ]);
    expect(unknownVariables({ LEASEHOLD_SCHEMA: 'x', LEASEHOLD_API_TOKEN: 'y' })).toEqual([]);
  });
});
