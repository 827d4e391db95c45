import { ValidationError } from '../errors.js';

/**
 * libpq's multi-host connection strings, the form pg_auto_failover hands
 * out and Patroni setups, JDBC, psycopg and postgres.js accept:
 *
 *   postgres://user@host1:5432,host2:5433/db?target_session_attrs=read-write
 *   postgres://user@/db?host=host1,host2&port=5432,5433
 *
 * node-postgres connects to one host only and refuses the first form
 * ("Invalid URL"; node-postgres #1470). This reads the host list out and
 * gives each host a single-host URL with everything else of the original
 * (user, password, database, sslmode and every other parameter), which pg
 * then parses as it always has; db/hosts.ts tries them in order.
 *
 * libpq's rules kept here: hosts are tried in the order listed; each host
 * of the URL form may carry its own port; in the parameter form `port` is a
 * list as long as `host`, or one port for all; `target_session_attrs` is
 * `any` (the default: the first host that connects) or `read-write` (the
 * first whose sessions accept writes by default). libpq's other values
 * (read-only, primary, standby, prefer-standby) ask for a server leasehold
 * cannot work on, or one that may refuse its writes, and are refused here
 * by name. A pure module: no I/O, so configuration checks it at start.
 */

export type TargetSessionAttrs = 'any' | 'read-write';

export interface DatabaseHost {
  /** host:port as written (a socket directory decoded), for logs and errors; never a password. */
  label: string;
  /** The host, decoded: a name, an IP address (IPv6 without brackets) or a socket directory. */
  host: string;
  /** Its port; undefined: pg's default (PGPORT, else 5432). */
  port: number | undefined;
  /** A single-host URL for pg: the original with only this host. */
  url: string;
}

export interface DatabaseTarget {
  hosts: DatabaseHost[];
  targetSessionAttrs: TargetSessionAttrs;
}

const SUPPORTED_ATTRS: readonly string[] = ['any', 'read-write'];

/** Parameters this module consumes; every other one stays in each host's URL. */
const HOST_PARAMS = new Set(['host', 'port', 'target_session_attrs']);

interface QueryParam {
  raw: string;
  name: string;
  value: string;
}

/**
 * The hosts of `url` and what sessions must accept. `field` names the
 * setting in errors (DATABASE_URL, connectionString); messages never
 * repeat the URL, which may carry a password.
 */
export function parseDatabaseUrl(url: string, field = 'connectionString'): DatabaseTarget {
  const scheme = /^(postgres(?:ql)?):\/\//.exec(url);
  // Not a URL (a socket path, a keyword string): pg reads it as before.
  if (!scheme) return { hosts: [{ label: 'the database', host: '', port: undefined, url }], targetSessionAttrs: 'any' };
  const rest = url.slice(scheme[0].length);
  // libpq: the user part ends at the first '@' before the path.
  const pathStart = rest.search(/[/]/);
  const head = pathStart < 0 ? rest : rest.slice(0, pathStart);
  const at = head.lastIndexOf('@');
  const userinfo = at < 0 ? '' : rest.slice(0, at + 1);
  const afterUser = rest.slice(at + 1);
  const hostEnd = afterUser.search(/[/?#]/);
  const authority = hostEnd < 0 ? afterUser : afterUser.slice(0, hostEnd);
  const tail = hostEnd < 0 ? '' : afterUser.slice(hostEnd);
  const queryStart = tail.indexOf('?');
  const path = queryStart < 0 ? tail : tail.slice(0, queryStart);
  const params = queryStart < 0 ? [] : parseQuery(tail.slice(queryStart + 1), field);
  const param = (name: string) => params.findLast((p) => p.name === name)?.value;

  const attrs = param('target_session_attrs') ?? 'any';
  if (!SUPPORTED_ATTRS.includes(attrs)) {
    throw new ValidationError(
      field,
      `target_session_attrs=${attrs} is not supported: leasehold writes, so it needs read-write (the server that accepts writes now) or any`,
    );
  }
  const targetSessionAttrs = attrs as TargetSessionAttrs;

  const queryHosts = param('host');
  const queryPorts = param('port');
  const fromQuery = queryHosts !== undefined;
  const entries = fromQuery ? queryHosts.split(',') : authority.split(',');
  if (entries.length === 1) {
    // One host: the URL exactly as given, so pg reads it as it always has.
    const only = fromQuery ? hostFromParam(queryHosts, queryPorts, field) : hostFromAuthority(authority, queryPorts, field);
    return { hosts: [{ ...only, url }], targetSessionAttrs };
  }
  let ports: Array<string | undefined> = entries.map(() => undefined);
  if (queryPorts !== undefined) {
    const list = queryPorts.split(',');
    if (list.length !== 1 && list.length !== entries.length) {
      throw new ValidationError(field, `port lists ${list.length} ports for ${entries.length} hosts: give one port for all, or one per host`);
    }
    ports = entries.map((_, i) => (list.length === 1 ? list[0] : list[i]));
  }
  const kept = params.filter((p) => !HOST_PARAMS.has(p.name)).map((p) => p.raw);
  const query = kept.length > 0 ? `?${kept.join('&')}` : '';
  const hosts = entries.map((entry, i) => {
    if (entry === '') throw new ValidationError(field, `host ${i + 1} of ${entries.length} is empty`);
    const parsed = fromQuery ? hostFromParam(entry, ports[i], field) : hostFromAuthority(entry, ports[i], field);
    const authorityOf = fromQuery ? authorityForParam(parsed) : entryWithPort(entry, ports[i]);
    return { ...parsed, url: `${scheme[1]}://${userinfo}${authorityOf}${path}${query}` };
  });
  return { hosts, targetSessionAttrs };
}

function parseQuery(query: string, field: string): QueryParam[] {
  return query
    .split('&')
    .filter((raw) => raw !== '')
    .map((raw) => {
      const eq = raw.indexOf('=');
      const name = eq < 0 ? raw : raw.slice(0, eq);
      const value = eq < 0 ? '' : raw.slice(eq + 1);
      return { raw, name: decode(name, field), value: decode(value.replace(/\+/g, ' '), field) };
    });
}

function decode(text: string, field: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ValidationError(field, 'has a malformed percent-encoding (%XX)');
  }
}

function parsePort(text: string, field: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new ValidationError(field, `port ${JSON.stringify(text)} must be a whole number from 1 to 65535`);
  return port;
}

/** `host`, `host:port`, `[v6]`, `[v6]:port` or `%2Fsocket%2Fdir`, as in a URL's authority. */
function hostFromAuthority(entry: string, defaultPort: string | undefined, field: string): Omit<DatabaseHost, 'url'> {
  let host: string;
  let portText: string | undefined;
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0) throw new ValidationError(field, 'has an IPv6 host without its closing ]');
    host = entry.slice(1, close);
    const after = entry.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) throw new ValidationError(field, `has text after the IPv6 host [${host}]`);
    portText = after === '' ? undefined : after.slice(1);
  } else {
    const colon = entry.lastIndexOf(':');
    host = decode(colon < 0 ? entry : entry.slice(0, colon), field);
    portText = colon < 0 ? undefined : entry.slice(colon + 1);
  }
  portText ??= defaultPort;
  const port = portText === undefined || portText === '' ? undefined : parsePort(portText, field);
  return { label: labelOf(host, port), host, port };
}

function hostFromParam(host: string, portText: string | undefined, field: string): Omit<DatabaseHost, 'url'> {
  const port = portText === undefined || portText === '' ? undefined : parsePort(portText, field);
  return { label: labelOf(host, port), host, port };
}

/** A host of the `host=` list, written into a URL's authority: socket directories encoded, IPv6 in brackets. */
function authorityForParam({ host, port }: Omit<DatabaseHost, 'url'>): string {
  const written = host.startsWith('/') ? encodeURIComponent(host) : host.includes(':') ? `[${host}]` : encodeURIComponent(host);
  return port === undefined ? written : `${written}:${port}`;
}

/** The entry as written, with the `port=` parameter's port when it names none of its own. */
function entryWithPort(entry: string, port: string | undefined): string {
  const hasPort = entry.startsWith('[') ? /\]:/.test(entry) : entry.includes(':');
  return hasPort || port === undefined || port === '' ? entry : `${entry}:${port}`;
}

function labelOf(host: string, port: number | undefined): string {
  const shown = host === '' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return port === undefined ? shown : `${shown}:${port}`;
}

/** The hosts for a log line or an error: `host1:5432, host2:5433`. */
export function describeHosts(target: DatabaseTarget): string {
  return target.hosts.map((h) => h.label).join(', ');
}
