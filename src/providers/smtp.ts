import nodemailer from 'nodemailer';
import { classifySmtpError } from './classify-smtp.js';
import type { EmailGateway, EmailMessage, SendContext, SendResult } from './gateway.js';

export interface SmtpGatewayOptions {
  /** `smtp://user:pass@host:587` or `smtps://...:465`; query options as nodemailer reads them. */
  url: string;
}

/**
 * Plain SMTP through nodemailer, one connection per send (nothing to keep
 * healthy between batches, and an abort closes exactly that connection).
 * SMTP has no idempotency: a timeout after the message was transferred is
 * outcome-unknown and a later acceptance is flagged as a possible duplicate.
 *
 * To know whether the message was already on the wire when something went
 * wrong, nodemailer's transaction log is routed to an in-memory observer that
 * only looks for the server's `354` (start mail input) reply; nothing is
 * written anywhere, so no address reaches a log.
 */
export class SmtpGateway implements EmailGateway {
  readonly name = 'smtp';
  readonly idempotent = false;

  constructor(private readonly options: SmtpGatewayOptions) {}

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    let dataStarted = false;
    const observe = (entry: unknown, text: unknown) => {
      if ((entry as { tnx?: unknown } | undefined)?.tnx === 'server' && typeof text === 'string' && /^354\b/.test(text)) {
        dataStarted = true;
      }
    };
    const silent = () => {};
    const transport = nodemailer.createTransport({
      url: this.options.url,
      transactionLog: true,
      logger: { trace: silent, debug: observe, info: silent, warn: silent, error: silent, fatal: silent },
    });
    try {
      const info = await transport.sendMail({
        from: message.from,
        to: message.to,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        subject: message.subject,
        text: message.text,
        html: message.html,
        headers: message.headers,
        signal: context.signal,
      });
      const accepted = (info.accepted ?? []).length;
      if (accepted === 0) {
        return { kind: 'rejected', reason: 'SMTP: no recipient accepted', providerCode: 'no_recipient' };
      }
      const replyCode = Number(/^\d{3}/.exec(info.response ?? '')?.[0] ?? 250);
      return { kind: 'accepted', receipt: info.messageId, providerStatus: replyCode };
    } catch (error) {
      const e = error as { code?: string; originalCode?: string; responseCode?: number; response?: string; command?: string };
      return classifySmtpError({
        code: e.code,
        originalCode: e.originalCode,
        responseCode: typeof e.responseCode === 'number' ? e.responseCode : undefined,
        response: e.response,
        command: e.command,
        dataStarted,
        aborted: context.signal.aborted,
      });
    } finally {
      transport.close();
    }
  }
}
