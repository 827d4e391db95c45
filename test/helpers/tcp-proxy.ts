import net from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of PostgreSQL, for faults a real
 * server restart cannot make: `freeze()` stops forwarding on every
 * connection open now while keeping the sockets open, which is what a
 * half-open connection looks like after a failover, a partition or a frozen
 * VM (the peer never answers and never closes). Connections opened after
 * the freeze pass normally.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket; frozen: boolean }>();

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<number> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      const pair = { client, upstream, frozen: false };
      this.pairs.add(pair);
      const forward = (from: net.Socket, to: net.Socket) =>
        from.on('data', (chunk) => {
          // A frozen pair swallows what it gets: the sender sees its bytes
          // leave and no answer ever come back.
          if (!pair.frozen) to.write(chunk);
        });
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
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
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
export function throughProxy(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}
