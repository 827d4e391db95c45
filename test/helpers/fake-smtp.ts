import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';

/**
 * A real SMTP server (smtp-server) on 127.0.0.1 and a free port that keeps
 * every message it accepted, with a per-recipient script for the replies
 * tests need: a 5xx or 4xx at RCPT TO, at MAIL FROM or after DATA, a slow
 * answer after DATA (to time out with the message already sent), or the
 * connection dropped at one of those points. It counts the TCP connections
 * clients open, to see a pool reuse them.
 */
export interface SmtpRule {
  stage: 'mail' | 'rcpt' | 'data';
  responseCode?: number;
  message?: string;
  /** Wait this long before answering (at DATA: then accept unless responseCode is set). */
  delayMs?: number;
  /** At DATA: keep the final reply back until `release()` (the message is fully received meanwhile). */
  hold?: boolean;
  /**
   * Drop the connection instead of answering: at MAIL FROM or RCPT TO
   * (nothing of the message sent yet), or at DATA once the first bytes of
   * the message arrived (mid-transfer, no final reply).
   */
  drop?: boolean;
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  headers: Record<string, string>;
  subject: string;
  /** The decoded text of all parts (quoted-printable undone). */
  text: string;
}

export interface FakeSmtpOptions {
  /** Require AUTH with these credentials. */
  auth?: { user: string; pass: string };
}

function parseHeaders(raw: string): Record<string, string> {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return headers;
}

const decodeQuotedPrintable = (s: string) =>
  s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

export class FakeSmtp {
  readonly received: ReceivedMail[] = [];
  private readonly rules = new Map<string, SmtpRule>();
  private readonly held: Array<() => void> = [];
  private heldWaiters: Array<() => void> = [];
  private server: SMTPServer;
  private address: AddressInfo | undefined;
  /** Open client sockets by their remote port (a session names its port). */
  private readonly sockets = new Map<number, Socket>();
  private openWaiters: Array<{ count: number; wake: () => void }> = [];
  /** TCP connections clients opened since start (or the last `resetCounts()`). */
  opened = 0;
  /** Most connections open at the same time since start (or the last `resetCounts()`). */
  peakOpen = 0;

  constructor(private readonly options: FakeSmtpOptions = {}) {
    const config: SMTPServerOptions = {
      disabledCommands: ['STARTTLS'],
      disableReverseLookup: true,
      authOptional: !options.auth,
      logger: false,
      onAuth: (auth, _session, callback) => {
        if (auth.username === options.auth?.user && auth.password === options.auth?.pass) return callback(null, { user: auth.username });
        const error = Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 });
        callback(error);
      },
      onMailFrom: (address, session, callback) => {
        const rule = this.rules.get(address.address);
        if (rule?.stage === 'mail') return rule.drop ? this.drop(session) : this.answer(rule, callback);
        callback();
      },
      onRcptTo: (address, session, callback) => {
        const rule = this.rules.get(address.address);
        if (rule?.stage === 'rcpt') return rule.drop ? this.drop(session) : this.answer(rule, callback);
        callback();
      },
      onData: (stream, session, callback) => {
        const to = session.envelope.rcptTo.map((r) => r.address);
        const rule = to.map((a) => this.rules.get(a)).find((r) => r?.stage === 'data');
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => {
          chunks.push(c);
          if (rule?.drop) this.drop(session);
        });
        stream.on('end', () => {
          if (rule?.drop) return;
          const finish = (error?: Error) => {
            if (error) return callback(error);
            const raw = Buffer.concat(chunks).toString('utf8');
            const headers = parseHeaders(raw);
            const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
            this.received.push({ from, to, raw, headers, subject: headers['subject'] ?? '', text: decodeQuotedPrintable(raw) });
            callback(null, `Message queued as fake-${this.received.length}`);
          };
          if (!rule) return finish();
          if (rule.hold) {
            this.held.push(() => finish());
            for (const wake of this.heldWaiters.splice(0)) wake();
            return;
          }
          setTimeout(() => {
            finish(rule.responseCode ? Object.assign(new Error(rule.message ?? 'refused'), { responseCode: rule.responseCode }) : undefined);
          }, rule.delayMs ?? 0);
        });
      },
    };
    this.server = new SMTPServer(config);
    // A dropped or aborted connection resets its socket; what matters is what the client saw.
    this.server.on('error', () => {});
    this.server.server.on('connection', (socket: Socket) => {
      const port = socket.remotePort!;
      this.sockets.set(port, socket);
      this.opened += 1;
      this.peakOpen = Math.max(this.peakOpen, this.sockets.size);
      socket.once('close', () => {
        this.sockets.delete(port);
        this.wakeOpenWaiters();
      });
    });
  }

  /** Client connections open now. */
  get open(): number {
    return this.sockets.size;
  }

  /** Start counting `opened` and `peakOpen` afresh (from the connections open now). */
  resetCounts(): void {
    this.opened = 0;
    this.peakOpen = this.sockets.size;
  }

  /** Resolves once at most `count` client connections are open (0: every client has gone). */
  openAtMost(count: number): Promise<void> {
    if (this.sockets.size <= count) return Promise.resolve();
    return new Promise((wake) => this.openWaiters.push({ count, wake }));
  }

  /** Script the answer for one address (sender for stage `mail`, recipient otherwise). */
  rule(address: string, rule: SmtpRule): void {
    this.rules.set(address, rule);
  }

  /** Resolves once a message is held after DATA (fully received, final reply not yet sent). */
  messageHeld(): Promise<void> {
    if (this.held.length > 0) return Promise.resolve();
    return new Promise((resolve) => this.heldWaiters.push(resolve));
  }

  /** Send the held final replies (250): the messages are queued now. */
  release(): void {
    for (const finish of this.held.splice(0)) finish();
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.address = this.server.server.address() as AddressInfo;
    return this.url;
  }

  get url(): string {
    const auth = this.options.auth ? `${encodeURIComponent(this.options.auth.user)}:${encodeURIComponent(this.options.auth.pass)}@` : '';
    return `smtp://${auth}127.0.0.1:${this.address!.port}`;
  }

  urlWith(auth: { user: string; pass: string }): string {
    return `smtp://${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@127.0.0.1:${this.address!.port}`;
  }

  /** Stops listening and cuts the connections still open (a client's pooled idle ones): smtp-server would wait 30 s for them. */
  stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets.values()) socket.destroy();
    return closed;
  }

  /** Drop this session's connection without a reply, as a network failure would. */
  private drop(session: SMTPServerSession): void {
    this.sockets.get(session.remotePort)?.destroy();
  }

  private wakeOpenWaiters(): void {
    const ready = this.openWaiters.filter((w) => this.sockets.size <= w.count);
    this.openWaiters = this.openWaiters.filter((w) => this.sockets.size > w.count);
    for (const { wake } of ready) wake();
  }

  private answer(rule: SmtpRule, callback: (err?: Error | null) => void): void {
    setTimeout(() => callback(Object.assign(new Error(rule.message ?? 'refused'), { responseCode: rule.responseCode ?? 550 })), rule.delayMs ?? 0);
  }
}
