import pg from 'pg';
import type { Logger } from '../observability/logger.js';
import { ident } from './pool.js';

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

export async function notifyIntents(db: { query(text: string, values?: unknown[]): Promise<unknown> }, schema: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [intentsChannel(schema), '']);
}

export class Listener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;

  constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    private readonly onNotify: () => void,
    private readonly logger: Logger,
  ) {}

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    await this.client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'leasehold-listener' });
    this.client = client;
    client.on('notification', () => this.onNotify());
    client.on('error', () => this.reconnect(client));
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${ident(this.channel)}`);
      this.failures = 0;
      // Anything committed while we were not listening is picked up now.
      this.onNotify();
    } catch (error) {
      this.logger.warn({ event: 'listener.error', err: error }, 'LISTEN connection failed; retrying');
      this.reconnect(client);
    }
  }

  private reconnect(client: pg.Client): void {
    if (this.stopped || this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.failures += 1;
    const delay = Math.min(10_000, 100 * 2 ** Math.min(this.failures, 7));
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }
}
