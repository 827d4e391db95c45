import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import { describeHosts, parseDatabaseUrl } from '../../src/model/database-url.js';

/** What pg itself reads from a host's URL: the proof each one keeps every other parameter. */
function pgReads(url: string) {
  const client = new pg.Client({ connectionString: url });
  const p = (client as unknown as { connectionParameters: Record<string, unknown> }).connectionParameters;
  return { host: p.host, port: p.port, user: p.user, password: client.password, database: p.database, ssl: p.ssl, application_name: p.application_name };
}

describe('parseDatabaseUrl: one host', () => {
  it('keeps the URL exactly as given, so pg reads it as it always has', () => {
    const url = 'postgres://app:s3cret@db.internal:6432/leasehold?sslmode=no-verify&application_name=x';
    const target = parseDatabaseUrl(url);
    expect(target.targetSessionAttrs).toBe('any');
    expect(target.hosts).toEqual([{ label: 'db.internal:6432', host: 'db.internal', port: 6432, url }]);
  });

  it('reads target_session_attrs=read-write on a single host (its session is checked as well)', () => {
    expect(parseDatabaseUrl('postgresql://u@h/db?target_session_attrs=read-write').targetSessionAttrs).toBe('read-write');
  });

  it('passes a string that is not a URL through to pg untouched', () => {
    expect(parseDatabaseUrl('/var/run/postgresql leasehold').hosts[0]!.url).toBe('/var/run/postgresql leasehold');
  });
});

describe('parseDatabaseUrl: several hosts (libpq URL form)', () => {
  const url = 'postgres://app:p%40ss@host1:5432,host2:5433/leasehold?sslmode=no-verify&target_session_attrs=read-write&application_name=lh';

  it('lists the hosts in order, each with its own port', () => {
    const target = parseDatabaseUrl(url);
    expect(target.targetSessionAttrs).toBe('read-write');
    expect(target.hosts.map((h) => [h.host, h.port, h.label])).toEqual([
      ['host1', 5432, 'host1:5432'],
      ['host2', 5433, 'host2:5433'],
    ]);
    expect(describeHosts(target)).toBe('host1:5432, host2:5433');
  });

  it("gives each host a URL pg reads with everything else of the original: user, password, database, sslmode, parameters", () => {
    const [first, second] = parseDatabaseUrl(url).hosts;
    expect(pgReads(first!.url)).toEqual({ host: 'host1', port: 5432, user: 'app', password: 'p@ss', database: 'leasehold', ssl: { rejectUnauthorized: false }, application_name: 'lh' });
    expect(pgReads(second!.url)).toMatchObject({ host: 'host2', port: 5433, password: 'p@ss', database: 'leasehold', ssl: { rejectUnauthorized: false } });
    expect(first!.url).not.toContain('target_session_attrs');
  });

  it('a host without a port takes the port= parameter, else the default', () => {
    const withParam = parseDatabaseUrl('postgres://u@a,b:7000/db?port=6000').hosts;
    expect(withParam.map((h) => h.port)).toEqual([6000, 7000]);
    expect(pgReads(withParam[0]!.url)).toMatchObject({ host: 'a', port: 6000 });
    const without = parseDatabaseUrl('postgres://u@a,b/db').hosts;
    expect(without.map((h) => [h.port, h.label])).toEqual([
      [undefined, 'a'],
      [undefined, 'b'],
    ]);
    expect(pgReads(without[1]!.url)).toMatchObject({ host: 'b', port: 5432 });
  });

  it('reads IPv6 hosts in brackets', () => {
    const hosts = parseDatabaseUrl('postgres://u@[::1]:5432,[fe80::2]/db').hosts;
    expect(hosts.map((h) => [h.host, h.port, h.label])).toEqual([
      ['::1', 5432, '[::1]:5432'],
      ['fe80::2', undefined, '[fe80::2]'],
    ]);
    expect(pgReads(hosts[0]!.url)).toMatchObject({ host: '::1', port: 5432 });
  });

  it('reads the host= and port= parameter form, with one port per host or one for all', () => {
    const hosts = parseDatabaseUrl('postgres://u@/db?host=a,b&port=5432,5433&sslmode=disable').hosts;
    expect(hosts.map((h) => [h.host, h.port])).toEqual([
      ['a', 5432],
      ['b', 5433],
    ]);
    expect(pgReads(hosts[1]!.url)).toMatchObject({ host: 'b', port: 5433, database: 'db', ssl: false });
    expect(parseDatabaseUrl('postgres://u@/db?host=a,b&port=6000').hosts.map((h) => h.port)).toEqual([6000, 6000]);
  });

  it('reads socket directories among the hosts', () => {
    const hosts = parseDatabaseUrl('postgres://u@/db?host=/var/run/postgresql,db2').hosts;
    expect(pgReads(hosts[0]!.url)).toMatchObject({ host: '/var/run/postgresql', database: 'db' });
    expect(pgReads(hosts[1]!.url)).toMatchObject({ host: 'db2', database: 'db' });
  });
});

describe('parseDatabaseUrl: refused, naming what is wrong and never the URL', () => {
  const refused = (url: string) => {
    try {
      parseDatabaseUrl(url, 'DATABASE_URL');
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).not.toContain('s3cret');
      return (error as Error).message;
    }
    throw new Error(`${url} was accepted`);
  };

  it.each(['read-only', 'primary', 'standby', 'prefer-standby', 'readwrite'])('target_session_attrs=%s', (value) => {
    expect(refused(`postgres://u:s3cret@a,b/db?target_session_attrs=${value}`)).toBe(
      `DATABASE_URL: target_session_attrs=${value} is not supported: leasehold writes, so it needs read-write (the server that accepts writes now) or any`,
    );
  });

  it('a port list of another length than the host list', () => {
    expect(refused('postgres://u:s3cret@/db?host=a,b,c&port=1,2')).toBe('DATABASE_URL: port lists 2 ports for 3 hosts: give one port for all, or one per host');
  });

  it('an empty host or a port that is no port', () => {
    expect(refused('postgres://u:s3cret@a,,b/db')).toBe('DATABASE_URL: host 2 of 3 is empty');
    expect(refused('postgres://u:s3cret@a:5432,b:99999/db')).toBe('DATABASE_URL: port "99999" must be a whole number from 1 to 65535');
    expect(refused('postgres://u:s3cret@a:x,b/db')).toBe('DATABASE_URL: port "x" must be a whole number from 1 to 65535');
  });
});
