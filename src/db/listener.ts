import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { isConnectionError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { DatabaseHosts } from './hosts.js';
import { connectionBounds, ident } from './pool.js';

/**
 * Wake-ups across processes: the expiry worker NOTIFYs after committing new
 * intents, and delivery workers LISTEN so they send within milliseconds
 * instead of at their next poll. Purely a latency optimisation: a missed
 * notification (connection lost, listener restarting) only means the next
 * poll picks the work up, so nothing depends on delivery of a NOTIFY.
 */
export function intentsChannel(schema: string): string {
  return `leasehold_intents.${schema}`;
}

export async function notifyIntents(
  db: { query(text: string, values?: unknown[]): Promise<unknown> },
  schema: string,
  payload = '',
): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [intentsChannel(schema), payload]);
}

/** Payloads of the listener's own test notifications; never a wake-up. */
export const PROBE_PREFIX = 'probe:';

export interface ListenerOptions {
  /**
   * Send a NOTIFY with this payload on the channel, the way the expiry lane
   * does (through the pool). Given: after each LISTEN the listener checks
   * that its own test notification arrives within `probeTimeoutMs`, and
   * otherwise gives up (see `onUnavailable`).
   */
  probe?: (payload: string) => Promise<void>;
  probeTimeoutMs?: number;
  /**
   * The payload this process's own expiry lane sends with its NOTIFY
   * (ExpiryWorkerOptions.notifyPayload): that lane wakes the delivery lane
   * beside it in-process as it commits, so its NOTIFY coming back is not a
   * wake-up here (it would cost a lease statement that finds nothing).
   * Notifications from other processes wake as always.
   */
  ownPayload?: string;
  /** Called once when the listener gives up; the worker's polling carries on alone. */
  onUnavailable?: (reason: string) => void;
  /**
   * Called with the session once it is checked (connected, listening, its
   * test notification arrived): the one connection of this process known to
   * be a session of its own, where a session advisory lock lives exactly as
   * long as the process's connection (db/presence.ts). A throw here counts
   * as a failed session: it is closed and opened again.
   */
  onSession?: (client: pg.Client) => Promise<void>;
  /** Called when a checked session is lost (before reconnecting). */
  onSessionLost?: () => void;
  /** A heartbeat query on the session this often (default 2000 ms): a session that stops answering is replaced. */
  heartbeatMs?: number;
  /** Bounds for the session's connection and queries (db/pool.ts connectionBounds). */
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

/**
 * Set on the session so the server notices our death quickly: a killed
 * process's socket is closed by its kernel at once, but a partitioned or
 * frozen machine's is not, and until the server drops the connection the
 * session's advisory lock (db/presence.ts) says the worker is alive. With
 * these the server gives up on a silent client after about 4 s. Settings a
 * server does not know (before PostgreSQL 12, tcp_user_timeout) are skipped.
 */
const SESSION_KEEPALIVES = ['tcp_keepalives_idle = 2', 'tcp_keepalives_interval = 1', 'tcp_keepalives_count = 2', 'tcp_user_timeout = 4000'];

/**
 * A heartbeat unanswered this long means the session is gone: shorter than
 * the query bound, so a worker learns within about 5 s that its presence
 * lock is gone too (the server drops a silent session after about 4 s).
 */
const HEARTBEAT_TIMEOUT_MS = 3000;

/**
 * Longest wait between two attempts to open the session. The session
 * carries the worker's presence: until it is back after the database
 * returns, the leases of a worker killed meanwhile cannot be reclaimed, so
 * the wait stays short. At 2000 ms, a worker killed just after a restart,
 * with a purge of every session 0.4 s later, had its intents resent 2.55 s
 * after its death (the chaos drill, one run in thirty): every listener was
 * still waiting out its back-off from the outage.
 */
const MAX_RECONNECT_DELAY_MS = 500;

/**
 * Why a test notification can go missing: behind a transaction-mode pooler
 * (PgBouncer `pool_mode = transaction`) LISTEN registers on whichever server
 * connection ran that one statement, which then serves other clients; the
 * notifications go there, never to us. The statement itself succeeds, so
 * only a round trip shows it.
 */
const UNAVAILABLE_HINT =
  'LISTEN does not work on this connection (a transaction-mode pooler such as PgBouncer?); the delivery lane polls instead. ' +
  'Set LEASEHOLD_LISTEN_URL to a direct or session-mode connection for wake-ups within milliseconds, or LEASEHOLD_LISTEN=off to skip the check';

export class Listener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private probeWaiter: { payload: string; resolve: () => void } | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private checked = false;
  /** The URL's hosts: the session goes to the one that accepts writes now (a URL may list several). */
  private readonly hosts: DatabaseHosts;

  constructor(
    connectionString: string,
    private readonly channel: string,
    private readonly onNotify: () => void,
    private readonly logger: Logger,
    private readonly options: ListenerOptions = {},
  ) {
    this.hosts = new DatabaseHosts(connectionString);
  }

  private get probeTimeoutMs(): number {
    return this.options.probeTimeoutMs ?? 5000;
  }

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.heartbeat);
    this.probeWaiter?.resolve();
    await this.client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    // The first host that takes the session (a standby is closed and the
    // next host tried when the URL asks for read-write), so LISTEN never
    // runs on a server in recovery.
    let client: pg.Client;
    try {
      // A session still opening when stop() comes is ended below, not
      // waited for: a stop during an outage must not wait out the connect timeout.
      ({ client } = await this.hosts.openSession({
        application_name: 'leasehold-listener',
        ...connectionBounds({ connectTimeoutMs: this.options.connectTimeoutMs, queryTimeoutMs: this.options.queryTimeoutMs }),
      }));
    } catch (error) {
      if (this.stopped) return;
      this.logger.warn({ event: 'listener.error', err: error }, 'LISTEN connection failed; retrying');
      return this.retry();
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    client.on('notification', (message) => {
      const payload = message.payload ?? '';
      // ('' is every process that names none: never its own.)
      if (this.options.ownPayload && payload === this.options.ownPayload) return;
      if (!payload.startsWith(PROBE_PREFIX)) return this.onNotify();
      if (payload === this.probeWaiter?.payload) this.probeWaiter.resolve();
    });
    client.on('error', () => this.reconnect(client));
    client.on('end', () => this.reconnect(client));
    let phase: 'setup' | 'listen' | 'probe' = 'setup';
    try {
      for (const setting of SESSION_KEEPALIVES) await client.query(`SET ${setting}`).catch(() => {});
      phase = 'listen';
      await client.query(`LISTEN ${ident(this.channel)}`);
      phase = 'probe';
      if (this.options.probe) {
        const arrived = await this.probe();
        if (this.stopped || this.client !== client) return;
        if (!arrived) return this.giveUp(client, `no test notification arrived within ${this.probeTimeoutMs} ms`);
        this.logger.info({ event: 'listener.ready' }, 'LISTEN session checked: wake-ups arrive');
        if (this.options.onSession) await this.options.onSession(client);
        if (this.stopped || this.client !== client) return;
        this.checked = true;
      }
      this.failures = 0;
      this.startHeartbeat(client);
      // Anything committed while we were not listening is picked up now.
      this.onNotify();
    } catch (error) {
      if (this.client !== client) return;
      // A server that refuses the LISTEN statement (a pooler that forbids
      // it) will refuse it again: stop asking. A connection that failed or
      // broke is worth another try.
      if (phase === 'listen' && error instanceof pg.DatabaseError && !isConnectionError(error)) {
        return this.giveUp(client, `LISTEN failed: ${(error as Error).message}`);
      }
      this.logger.warn({ event: 'listener.error', err: error }, 'LISTEN connection failed; retrying');
      this.reconnect(client);
    }
  }

  /** Our own NOTIFY, sent the way the expiry lane sends its, must reach this session. */
  private async probe(): Promise<boolean> {
    const payload = `${PROBE_PREFIX}${randomUUID()}`;
    const timeoutMs = this.probeTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<boolean>((resolve) => {
      this.probeWaiter = { payload, resolve: () => resolve(true) };
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      await this.options.probe!(payload);
      return await arrived;
    } finally {
      clearTimeout(timer);
      this.probeWaiter = undefined;
    }
  }

  /** One warning, then polling only, for the rest of this process. */
  private giveUp(client: pg.Client, reason: string): void {
    if (this.stopped || this.client !== client) return;
    this.stopped = true;
    this.client = undefined;
    client.end().catch(() => {});
    this.logger.warn({ event: 'listener.unavailable', reason }, UNAVAILABLE_HINT);
    this.options.onUnavailable?.(reason);
  }

  /**
   * Notifications only ever arrive, so a session that died silently (a
   * partition, a half-open socket after a failover) would look like a quiet
   * one forever; a query now and then (bounded by the query timeout) tells.
   */
  private startHeartbeat(client: pg.Client): void {
    clearInterval(this.heartbeat);
    let inFlight = false;
    this.heartbeat = setInterval(() => {
      if (inFlight || this.client !== client) return;
      inFlight = true;
      // A server that stopped taking writes (default_transaction_read_only
      // turned on; a standby never keeps this session, its restart ends it)
      // gets no more NOTIFYs from the lanes, which write elsewhere now.
      client
        .query({ text: 'SELECT 1', query_timeout: HEARTBEAT_TIMEOUT_MS } as pg.QueryConfig)
        .then(() => this.hosts.readOnlyReason(client))
        .then((readOnly) => {
          if (readOnly === undefined) return;
          this.logger.warn({ event: 'listener.read_only', reason: readOnly }, 'the LISTEN session\'s server no longer accepts writes; moving to the one that does');
          this.reconnect(client);
        })
        .catch(() => this.reconnect(client))
        .finally(() => (inFlight = false));
    }, this.options.heartbeatMs ?? 2000);
    this.heartbeat.unref();
  }

  private reconnect(client: pg.Client): void {
    if (this.stopped || this.client !== client) return;
    this.client = undefined;
    clearInterval(this.heartbeat);
    if (this.checked) {
      this.checked = false;
      this.options.onSessionLost?.();
    }
    client.end().catch(() => {});
    this.retry();
  }

  private retry(): void {
    if (this.stopped) return;
    this.failures += 1;
    // Capped low: the session carries this worker's presence, and while it
    // is away the worker's new leases cannot be reclaimed quickly.
    const delay = Math.min(MAX_RECONNECT_DELAY_MS, 50 * 2 ** Math.min(this.failures - 1, 6));
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
