import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of PostgreSQL, for faults a real
 * server restart cannot make: `freeze()` stops forwarding on every
 * connection open now while keeping the sockets open, which is what a
 * half-open connection looks like after a failover, a partition or a frozen
 * VM (the peer never answers and never closes). Connections opened after
 * the freeze pass normally.
 */
/**
 * What the relay does to the bytes it forwards, for kernels without netem:
 * a fixed delay each way, and a share of chunks held back as a lost
 * segment's retransmission would hold the stream (TCP itself never loses
 * bytes, so loss shows to the endpoints as stalls). Order is kept.
 */
export interface Impairment {
  delayMs?: number;
  /** Share of chunks (0-1) held back a further 200-1000 ms. */
  stallChance?: number;
}

export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket; frozen: boolean }>();
  private impairment: Impairment = {};
  private refusing = false;

  /** Drop every connection and refuse new ones (a database that went away) until restore(). */
  cut(): void {
    this.refusing = true;
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }

  restore(): void {
    this.refusing = false;
  }

  /** Impair what is forwarded from now on ({} for none). */
  impair(impairment: Impairment): void {
    this.impairment = impairment;
  }

  constructor(private target: { host: string; port: number }) {}

  /**
   * Send new connections to `target` from now on, as an RDS endpoint or
   * HAProxy does when a standby is promoted; connections open now stay
   * where they are (to a dead primary they are already closed).
   */
  retarget(target: { host: string; port: number }): void {
    this.target = target;
  }

  /** Listen on `host` (default 127.0.0.1) and a free port; returns the port. */
  async start(host = '127.0.0.1'): Promise<number> {
    this.server = net.createServer((client) => {
      if (this.refusing) return void client.destroy();
      const upstream = net.connect(this.target.port, this.target.host);
      const pair = { client, upstream, frozen: false };
      this.pairs.add(pair);
      const forward = (from: net.Socket, to: net.Socket) => {
        // Held chunks leave from one queue in order: a timer per chunk could
        // fire out of order (Date.now() and the timers' clock differ by a
        // fraction of a millisecond), which a replication stream notices.
        const held: Array<{ at: number; chunk: Buffer }> = [];
        let timer: NodeJS.Timeout | undefined;
        const pump = () => {
          timer = undefined;
          while (held.length > 0 && held[0]!.at <= Date.now()) {
            const { chunk } = held.shift()!;
            if (to.writable) to.write(chunk);
          }
          if (held.length > 0) timer = setTimeout(pump, held[0]!.at - Date.now());
        };
        from.on('data', (chunk: Buffer) => {
          // A frozen pair swallows what it gets: the sender sees its bytes
          // leave and no answer ever come back.
          if (pair.frozen) return;
          const { delayMs = 0, stallChance = 0 } = this.impairment;
          const stall = Math.random() < stallChance ? 200 + Math.random() * 800 : 0;
          if (delayMs === 0 && stall === 0 && held.length === 0) return void to.write(chunk);
          held.push({ at: Math.max(held.at(-1)?.at ?? 0, Date.now() + delayMs + stall), chunk });
          timer ??= setTimeout(pump, held[0]!.at - Date.now());
        });
      };
      forward(client, upstream);
      forward(upstream, client);
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, host, resolve));
    return (this.server!.address() as net.AddressInfo).port;
  }

  /** Connections open now, through this proxy. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Stop forwarding on every connection open now; they stay open. */
  freeze(): number {
    for (const pair of this.pairs) pair.frozen = true;
    return this.pairs.size;
  }

  async stop(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** `url` with its host and port replaced by the proxy's. */
export function throughProxy(url: string, port: number, host = '127.0.0.1'): string {
  const parsed = new URL(url);
  parsed.hostname = host;
  parsed.port = String(port);
  return parsed.toString();
}

/** A proxy started in front of the server of `url`, and the URL that goes through it. */
export async function proxyInFront(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(url);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port) });
  return { proxy, url: throughProxy(url, await proxy.start()) };
}
