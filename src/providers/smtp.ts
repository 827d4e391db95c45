import type { Readable } from 'node:stream';
import nodemailer, { type Mail, type SMTPPoolOptions, type SMTPPoolSentMessageInfo } from 'nodemailer';
import { classifySmtpError } from './classify-smtp.js';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from './gateway.js';

/** nodemailer's own pool defaults. */
export const SMTP_DEFAULT_MAX_CONNECTIONS = 5;
export const SMTP_DEFAULT_MAX_MESSAGES = 100;

export interface SmtpGatewayOptions {
  /** `smtp://user:pass@host:587` or `smtps://...:465`; query options as nodemailer reads them. */
  url: string;
  /** Most connections open to the server at once (default 5); more sends wait in the pool's queue, under their timeout. */
  maxConnections?: number;
  /** Messages one connection carries before it is replaced by a fresh one (default 100). */
  maxMessages?: number;
}

/**
 * Plain SMTP through one nodemailer pool per gateway (one gateway is one
 * provider account): up to `maxConnections` connections, opened on the
 * first send, reused, each renewed after `maxMessages`, ended by `close()`.
 * A broken connection fails only the message on it; the next message gets
 * a fresh one. An abort (the send timeout) fails its message at once: a
 * queued one leaves the queue, one on a connection closes that connection
 * alone. SMTP has no idempotency: a timeout after the message was
 * transferred is outcome-unknown, a later acceptance a possible duplicate.
 *
 * Whether this message was on the wire when something failed is read from
 * the message's own stream, not the transaction log: in a pool the server's
 * lines carry only their connection's `sid`, the pool's lines a `cid` and
 * the message id, and no line ties the two, so a 354 cannot be attributed.
 * Each send hands nodemailer a signal of its own; a `stream` plugin finds
 * the send by it and files every stream nodemailer opens for the message
 * (one per connection it is tried on). nodemailer opens one only when the
 * connection is open and logged in, just before MAIL FROM (`sessionOpen`:
 * a loss from then on is that connection's, not an unreachable server),
 * and reads it only after the server's 354 to that message's DATA
 * (`dataStarted`). An unread stream means not a byte of the message went
 * out: `neverSent`, the test nodemailer's pool itself makes before it
 * moves a message of a dropped connection to another. nodemailer gets no
 * logger, so no address reaches a log.
 */
export class SmtpGateway implements EmailGateway {
  readonly name = 'smtp';
  readonly idempotent = false;
  readonly maxConnections: number;
  readonly maxMessages: number;
  private transport: Mail<SMTPPoolSentMessageInfo, SMTPPoolOptions> | undefined;
  /** Each send's message streams, under the signal that send hands to nodemailer. */
  private readonly streams = new WeakMap<AbortSignal, Readable[]>();

  constructor(private readonly options: SmtpGatewayOptions) {
    this.maxConnections = options.maxConnections ?? SMTP_DEFAULT_MAX_CONNECTIONS;
    this.maxMessages = options.maxMessages ?? SMTP_DEFAULT_MAX_MESSAGES;
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    // A signal of this send's own (aborting with the caller's): the key its streams are filed under.
    const signal = AbortSignal.any([context.signal]);
    const streams: Readable[] = [];
    this.streams.set(signal, streams);
    const transport = this.pool();
    try {
      const info = await transport.sendMail({
        from: message.from,
        to: message.to,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        subject: message.subject,
        text: message.text,
        html: message.html,
        headers: message.headers,
        signal,
      });
      const accepted = (info.accepted ?? []).length;
      if (accepted === 0) {
        return { kind: 'rejected', reason: 'SMTP: no recipient accepted', providerCode: 'no_recipient' };
      }
      const replyCode = Number(/^\d{3}/.exec(info.response ?? '')?.[0] ?? 250);
      return { kind: 'accepted', receipt: info.messageId, providerStatus: replyCode };
    } catch (error) {
      const dataStarted = streams.some((stream) => stream.readableDidRead);
      if (transport !== this.transport && streams.length === 0) {
        // close() ended the pool under a send still waiting for a connection: ours, not the server's.
        return { kind: 'failed', reason: 'SMTP: the gateway was closed before the message was sent', outcomeUnknown: false, neverSent: true };
      }
      const e = error as { code?: string; originalCode?: string; responseCode?: number; response?: string; command?: string };
      return classifySmtpError({
        code: e.code,
        originalCode: e.originalCode,
        responseCode: typeof e.responseCode === 'number' ? e.responseCode : undefined,
        response: e.response,
        command: e.command,
        dataStarted,
        sessionOpen: streams.length > 0,
        aborted: context.signal.aborted,
      });
    } finally {
      this.streams.delete(signal);
    }
  }

  /**
   * Ends the pool: idle connections at once, one still carrying a message
   * once that message is answered (the delivery lane stops its sends
   * first). A later send opens a new pool.
   */
  async close(): Promise<void> {
    const transport = this.transport;
    this.transport = undefined;
    transport?.close();
  }

  private pool(): Mail<SMTPPoolSentMessageInfo, SMTPPoolOptions> {
    if (this.transport) return this.transport;
    const transport = nodemailer.createTransport({
      url: this.options.url,
      pool: true,
      maxConnections: this.maxConnections,
      maxMessages: this.maxMessages,
    });
    // Runs once per message, after it is compiled and before the pool takes it.
    transport.use('stream', (mail, done) => {
      const streams = mail.data.signal ? this.streams.get(mail.data.signal) : undefined;
      if (streams) {
        const compiled = mail.message;
        const create = compiled.createReadStream.bind(compiled);
        compiled.createReadStream = (options) => {
          const stream = create(options);
          streams.push(stream);
          return stream;
        };
      }
      done();
    });
    this.transport = transport;
    return transport;
  }
}
