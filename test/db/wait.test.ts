import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, waitForDatabase } from '../../src/db/wait.js';
import { ConfigError, MigrationError } from '../../src/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { LogCapture } from '../helpers/server.js';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), { code: 'ECONNREFUSED' });

/** A clock that moves only when the wait sleeps, and a record of each pause. */
function harness(waitS: number) {
  const logs = new LogCapture();
  let time = 0;
  const pauses: number[] = [];
  const options = {
    waitS,
    hosts: 'h1:5432, h2:5433',
    logger: createLogger({ level: 'info', destination: logs }),
    now: () => time,
    sleep: async (ms: number) => {
      pauses.push(ms);
      time += ms;
    },
  };
  return { logs, pauses, options };
}

describe('waitForDatabase', () => {
  it('retries a refused connection with a capped, jittered back-off, logging once that it waits and once that it got through', async () => {
    const { logs, pauses, options } = harness(Infinity);
    let tries = 0;
    const result = await waitForDatabase(async () => {
      if (++tries < 40) throw refused();
      return 'migrated';
    }, options);
    expect(result).toBe('migrated');
    expect(pauses).toHaveLength(39);
    expect(Math.max(...pauses)).toBeLessThanOrEqual(5000);
    expect(pauses.slice(-10).every((p) => p >= 2500)).toBe(true);
    expect(new Set(pauses.slice(-10)).size).toBeGreaterThan(1);
    const events = logs.events();
    expect(events.map((e) => e.event)).toEqual(['db.waiting', 'db.connected']);
    expect(events[0]).toMatchObject({ hosts: 'h1:5432, h2:5433', code: 'ECONNREFUSED', waitS: 'forever', error: 'connect ECONNREFUSED 127.0.0.1:5999' });
    expect(events[1]).toMatchObject({ attempts: 40 });
  });

  it('gives up after waitS, and at once with 0', async () => {
    const { pauses, options } = harness(10);
    await expect(waitForDatabase(async () => Promise.reject(refused()), options)).rejects.toThrow(
      new DatabaseUnavailableError('the database is unreachable (h1:5432, h2:5433): connect ECONNREFUSED 127.0.0.1:5999; gave up after 10 s (LEASEHOLD_DB_WAIT_S=10)'),
    );
    expect(pauses.reduce((a, b) => a + b, 0)).toBe(10_000);
    const none = harness(0);
    await expect(waitForDatabase(async () => Promise.reject(refused()), none.options)).rejects.toThrow(/LEASEHOLD_DB_WAIT_S=0: not waiting$/);
    expect(none.pauses).toEqual([]);
    expect(none.logs.lines).toEqual([]);
  });

  it('a migration cut off by a lost connection is tried again', async () => {
    const { options } = harness(Infinity);
    let tries = 0;
    await waitForDatabase(async () => {
      if (++tries === 1) throw new MigrationError('migration 0003_x failed: the database system is shutting down', { cause: Object.assign(new Error('the database system is shutting down'), { code: '57P03' }) });
    }, options);
    expect(tries).toBe(2);
  });

  it.each([
    ['28P01', 'the server refused the password'],
    ['28000', 'the server does not let this user in'],
    ['3D000', 'the database does not exist'],
  ])('%s is a configuration error, at once and without waiting', async (code, words) => {
    const { pauses, options } = harness(Infinity);
    const error = waitForDatabase(async () => Promise.reject(Object.assign(new Error('the server said no'), { code })), options);
    await expect(error).rejects.toThrow(ConfigError);
    await expect(error).rejects.toThrow(`DATABASE_URL: ${words} (h1:5432, h2:5433): the server said no [${code}]; fix the URL's user, password or database name`);
    expect(pauses).toEqual([]);
  });

  it('any other error is not waited for', async () => {
    const { pauses, options } = harness(Infinity);
    await expect(waitForDatabase(async () => Promise.reject(Object.assign(new Error('syntax error'), { code: '42601' })), options)).rejects.toThrow('syntax error');
    expect(pauses).toEqual([]);
  });
});
