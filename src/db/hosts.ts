import pg from 'pg';
import { parseDatabaseUrl, type DatabaseHost, type DatabaseTarget } from '../model/database-url.js';

/**
 * Connections to the host that accepts writes now, for a URL that lists
 * several (model/database-url.ts), the way libpq does it: hosts are tried
 * in order; with target_session_attrs=read-write a session that connects
 * but does not accept writes (a standby, or default_transaction_read_only)
 * is closed and the next host is tried.
 *
 * Every connection of a process goes through here: the pool (db/pool.ts,
 * through `poolClient`), the LISTEN session that also carries the presence
 * lock (db/listener.ts, through `openSession`) and so the CLI.
 *
 * One departure from libpq: the host that gave the last good session is
 * tried first. After a failover the first listed host is often the old
 * primary, down or back as a standby, and trying it first on every new
 * connection would cost a connection attempt each time.
 */

/** The server took the connection but does not accept writes: SQLSTATE 25006, what its refusal of a write would carry. */
export class ReadOnlyServerError extends Error {
  readonly code = '25006';
  constructor(host: string, why: string) {
    super(`${host} does not accept writes (${why}); target_session_attrs=read-write asks for the server that does`);
    this.name = 'ReadOnlyServerError';
  }
}

/** Codes that mean the URL itself is wrong (the same on every host): authentication, a missing database. */
export const CONFIGURATION_CODES: readonly string[] = ['28P01', '28000', '3D000'];

/**
 * No host gave a session of the kind asked; the message names each host's
 * reason. `code` is what callers classify by: a configuration code of any
 * host, else read-only (25006) if a host was up but read-only, else the
 * first host's.
 */
export class NoHostError extends Error {
  readonly code: string | undefined;
  constructor(readonly failures: Array<{ host: DatabaseHost; error: Error }>) {
    super(`no host accepts the session: ${failures.map(({ host, error }) => `${host.label}: ${error.message}`).join('; ')}`);
    this.name = 'NoHostError';
    const codes = failures.map(({ error }) => (error as { code?: string }).code);
    this.code = codes.find((c) => c !== undefined && CONFIGURATION_CODES.includes(c)) ?? codes.find((c) => c === '25006') ?? codes[0];
  }
}

/** What the server reported about itself (ParameterStatus), per client: PostgreSQL 14 and later report in_hot_standby and default_transaction_read_only. */
const reported = new WeakMap<pg.Client, Map<string, string>>();

function track(client: pg.Client): void {
  const values = new Map<string, string>();
  reported.set(client, values);
  client.connection.on('parameterStatus', (message: { parameterName: string; parameterValue: string }) =>
    values.set(message.parameterName, message.parameterValue),
  );
}

const noop = () => {};

export class DatabaseHosts {
  readonly target: DatabaseTarget;
  /** The host of the last good session; tried first. */
  private last: DatabaseHost | undefined;
  private finding: Promise<DatabaseHost> | undefined;
  private readonly aims = new Map<DatabaseHost, { host: string; port: number }>();
  /** The host each pooled client went to. */
  private readonly hostOf = new WeakMap<pg.Client, DatabaseHost>();

  constructor(connectionString: string, field = 'connectionString') {
    this.target = parseDatabaseUrl(connectionString, field);
  }

  /** One host, any session: pg connects on its own, exactly as without this module. */
  get simple(): boolean {
    return this.target.hosts.length === 1 && this.target.targetSessionAttrs === 'any';
  }

  /** The URL pg is given for the first host (the original URL when there is one host). */
  get firstUrl(): string {
    return this.target.hosts[0]!.url;
  }

  /** The hosts in the order to try them: the last good one first, then the others as listed. */
  order(): DatabaseHost[] {
    const last = this.last;
    return last ? [last, ...this.target.hosts.filter((h) => h !== last)] : [...this.target.hosts];
  }

  /** This session is no good any more (its connection broke, its server turned read-only): try the hosts in order again. */
  forget(host: DatabaseHost): void {
    if (this.last === host) this.last = undefined;
  }

  /**
   * A pooled client came back with this error: a write refused as
   * read-only (25006) means its server no longer takes writes, so the next
   * new client looks for the host that does instead of going there again.
   */
  released(client: pg.Client, error: unknown): void {
    const host = this.hostOf.get(client);
    if (host && (error as { code?: string } | undefined)?.code === '25006') this.forget(host);
  }

  /**
   * Check a connected session against target_session_attrs, as libpq
   * does: from what the server reported at start when it reports both
   * settings (14 and later, no round trip), else with SHOW.
   */
  async readOnlyReason(client: pg.Client): Promise<string | undefined> {
    if (this.target.targetSessionAttrs === 'any') return undefined;
    const values = reported.get(client);
    const standby = values?.get('in_hot_standby');
    const readOnly = values?.get('default_transaction_read_only');
    if (standby !== undefined && readOnly !== undefined) {
      if (standby === 'on') return 'in hot standby';
      return readOnly === 'on' ? 'default_transaction_read_only is on' : undefined;
    }
    const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
    return rows[0]?.transaction_read_only === 'on' ? 'transaction_read_only is on' : undefined;
  }

  private async accept(client: pg.Client, host: DatabaseHost): Promise<void> {
    const why = await this.readOnlyReason(client);
    if (why !== undefined) throw new ReadOnlyServerError(host.label, why);
  }

  /**
   * A connected session on the first host that gives one of the kind
   * asked, a client of its own (not pooled). A client already carries an
   * 'error' listener (so a connection that breaks before the caller
   * listens cannot end the process); the caller adds its own.
   */
  async openSession(config: pg.ClientConfig): Promise<{ client: pg.Client; host: DatabaseHost }> {
    const failures: Array<{ host: DatabaseHost; error: Error }> = [];
    for (const host of this.order()) {
      const client = new pg.Client({ ...config, connectionString: host.url });
      track(client);
      client.on('error', noop);
      try {
        await client.connect();
        await this.accept(client, host);
        this.last = host;
        return { client, host };
      } catch (error) {
        this.forget(host);
        await client.end().catch(noop);
        failures.push({ host, error: error as Error });
        // Wrong credentials or database are wrong on every host.
        if (CONFIGURATION_CODES.includes((error as { code?: string }).code ?? '')) break;
      }
    }
    throw failures.length === 1 ? failures[0]!.error : new NoHostError(failures);
  }

  /** The host a new pooled client connects to: the last good one, else the first that gives a session now (found once for all waiting callers). */
  private async hostForPool(config: pg.ClientConfig): Promise<DatabaseHost> {
    if (this.target.hosts.length === 1) return this.target.hosts[0]!;
    if (this.last) return this.last;
    this.finding ??= this.openSession(config)
      .then(async ({ client, host }) => {
        await client.end().catch(noop);
        return host;
      })
      .finally(() => (this.finding = undefined));
    return this.finding;
  }

  /** host and port as pg reads them from this host's URL (a client built only to parse it; it never connects). */
  private aimOf(host: DatabaseHost): { host: string; port: number } {
    let aim = this.aims.get(host);
    if (!aim) {
      const parsed = new pg.Client({ connectionString: host.url });
      aim = { host: parsed.host, port: parsed.port };
      this.aims.set(host, aim);
    }
    return aim;
  }

  /**
   * pg.Pool's `Client`: a pg.Client that connects to the host that gives a
   * session of the kind asked. A pg.Client connects once, so it goes to one
   * host, chosen before it connects (by a probe session when no host is
   * known good); if that host fails it or turns out read-only, the connect
   * fails, the host is forgotten, and the pool's next connect probes the
   * hosts again.
   */
  poolClient(): typeof pg.Client {
    const hosts = this;
    class HostsClient extends pg.Client {
      private readonly settings: pg.ClientConfig;

      constructor(config: pg.ClientConfig) {
        super(config);
        this.settings = config;
        track(this);
      }

      override connect(): Promise<pg.Client>;
      override connect(callback: (err: Error | null, client?: pg.Client) => void): void;
      override connect(callback?: (err: Error | null, client?: pg.Client) => void): Promise<pg.Client> | void {
        const connected = this.connectToHost();
        if (!callback) return connected;
        connected.then(
          (client) => callback(null, client),
          (error: Error) => callback(error),
        );
      }

      private async connectToHost(): Promise<pg.Client> {
        const host = await hosts.hostForPool(this.settings);
        const aim = hosts.aimOf(host);
        hosts.hostOf.set(this, host);
        this.host = aim.host;
        this.port = aim.port;
        (this as unknown as { connectionParameters: { host: string; port: number } }).connectionParameters.host = aim.host;
        (this as unknown as { connectionParameters: { host: string; port: number } }).connectionParameters.port = aim.port;
        // Its connection breaking (a failover, a restart) is the sign the
        // host may have changed: the next new client looks again. Also
        // keeps an error between connect and the pool's own listener from
        // ending the process.
        this.on('error', () => hosts.forget(host));
        // The pool's connection timeout fired while the hosts were probed
        // (it destroys this client's socket): give up as pg would.
        if ((this.connection as unknown as { stream: { destroyed?: boolean } }).stream.destroyed) {
          throw new Error(`timeout expired before ${host.label} was tried (the connection timeout)`);
        }
        try {
          await super.connect();
          await hosts.accept(this, host);
          hosts.last = host;
          return this;
        } catch (error) {
          hosts.forget(host);
          await this.end().catch(noop);
          throw error;
        }
      }
    }
    return HostsClient as unknown as typeof pg.Client;
  }
}
