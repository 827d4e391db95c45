import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request as the receiver got it, after checking its signature. */
export interface ReceivedWebhook {
  id: string;
  timestamp: string;
  verified: boolean;
  status: number;
  body: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
}

/**
 * An application's webhook endpoint on 127.0.0.1: verifies every request
 * with the `standardwebhooks` package (as the docs' receiver does) and
 * answers what `answer` says (default 204). `down()` closes the port (a
 * refused connection), `up()` opens the same port again.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  answer: (id: string, attempt: number) => { status: number; headers?: Record<string, string> } = () => ({ status: 204 });
  private server: http.Server | undefined;
  private readonly verifier: Webhook;
  port = 0;

  constructor(readonly secret: string) {
    this.verifier = new Webhook(secret);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/events`;
  }

  /** Attempts seen per webhook-id. */
  attemptsOf(id: string): number {
    return this.received.filter((r) => r.id === id).length;
  }

  /** Each webhook-id answered 2xx (once or more), with its body. */
  delivered(): Map<string, ReceivedWebhook> {
    return new Map(this.received.filter((r) => r.verified && r.status < 300).map((r) => [r.id, r]));
  }

  async up(): Promise<void> {
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
        let body: ReceivedWebhook['body'];
        let verified = false;
        try {
          body = this.verifier.verify(raw, headers) as ReceivedWebhook['body'];
          verified = true;
        } catch {
          verified = false;
        }
        const id = headers['webhook-id'] ?? '';
        const { status, headers: extra } = verified ? this.answer(id, this.attemptsOf(id) + 1) : { status: 401 };
        this.received.push({ id, timestamp: headers['webhook-timestamp'] ?? '', verified, status, body });
        response.writeHead(status, extra);
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A fresh Standard Webhooks secret. */
export const webhookSecret = (): string => `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + Date.now()) % 256)).toString('base64')}`;
