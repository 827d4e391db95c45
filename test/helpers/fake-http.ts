import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the fake received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: unknown;
}

export interface CannedResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Answer only after this many ms (to drive timeouts). */
  delayMs?: number;
  /** Destroy the socket instead of answering (a dropped connection). */
  drop?: boolean;
}

export interface JsonReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (request: RecordedRequest) => JsonReply | Promise<JsonReply>;

/**
 * A small JSON HTTP server on 127.0.0.1 and a free port, for provider fakes.
 * It records every request, and `queue()` makes the next matching requests
 * answer with canned responses (status, body, headers) before the fake's
 * own logic runs, which is how tests reproduce each documented error.
 */
export class FakeHttpServer {
  readonly requests: RecordedRequest[] = [];
  private readonly canned: Array<{ path: string | undefined; response: CannedResponse }> = [];
  private server: http.Server | undefined;
  private readonly sockets = new Set<import('node:net').Socket>();

  /** Fakes of a whole API subclass this and override `respond`; one-off servers pass a handler. */
  constructor(private readonly handler?: Handler) {}

  protected respond(request: RecordedRequest): JsonReply | Promise<JsonReply> {
    if (!this.handler) throw new Error('FakeHttpServer needs a handler or a respond() override');
    return this.handler(request);
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    const address = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${address.port}`;
  }

  /** The next request (to `path`, if given) gets this answer instead of the fake's own. */
  queue(response: CannedResponse, path?: string): void {
    this.canned.push({ path, response });
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    let body: unknown = raw;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      // keep the raw text
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k.toLowerCase()] = v;
    const request: RecordedRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers, body };
    this.requests.push(request);

    const index = this.canned.findIndex((c) => c.path === undefined || c.path === url.pathname);
    if (index >= 0) {
      const { response } = this.canned.splice(index, 1)[0]!;
      if (response.delayMs) await new Promise((r) => setTimeout(r, response.delayMs));
      if (response.drop) {
        req.socket.destroy();
        return;
      }
      this.reply(res, { status: response.status, body: response.body, ...(response.headers ? { headers: response.headers } : {}) });
      return;
    }
    this.reply(res, await this.respond(request));
  }

  private reply(res: http.ServerResponse, reply: JsonReply): void {
    if (res.destroyed) return;
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status, {
      'content-type': typeof reply.body === 'string' ? 'text/html' : 'application/json',
      ...reply.headers,
    });
    res.end(text);
  }
}
