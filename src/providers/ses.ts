import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { classifySesError } from './classify-ses.js';
import { httpEndpoint, type EmailGateway, type EmailMessage, type HttpEndpoint, type SendContext, type SendResult } from './gateway.js';
import { neverSent, tagSafe } from './provider-common.js';

export interface SesGatewayOptions {
  region: string;
  /** A local or VPC endpoint; unset means the regional AWS endpoint. */
  endpoint?: string;
  /** Explicit credentials; unset means the SDK's default chain (env, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  configurationSetName?: string;
}

/**
 * Amazon SES v2 SendEmail through the official SDK with `maxAttempts: 1`:
 * the outbox owns retries, and an SDK retry after a timeout would be a
 * second, unrecorded delivery. SES has no idempotency key, so the intent id
 * travels as an EmailTag and as the X-Leasehold-Intent-Id header (Simple
 * content supports Headers in this SDK version); an acceptance after an
 * ambiguous attempt is flagged as a possible duplicate by the outbox.
 */
export class SesGateway implements EmailGateway {
  readonly name = 'ses';
  readonly idempotent = false;
  /** The configured endpoint, else the region's (SESv2: email.<region>.amazonaws.com). */
  readonly endpoint: HttpEndpoint;
  private readonly client: SESv2Client;

  constructor(private readonly options: SesGatewayOptions) {
    this.endpoint = httpEndpoint(options.endpoint ?? `https://email.${options.region}.amazonaws.com`);
    this.client = new SESv2Client({
      region: options.region,
      maxAttempts: 1,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
    });
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    const command = new SendEmailCommand({
      FromEmailAddress: message.from,
      Destination: { ToAddresses: [message.to] },
      ...(message.replyTo ? { ReplyToAddresses: [message.replyTo] } : {}),
      Content: {
        Simple: {
          Subject: { Data: message.subject, Charset: 'UTF-8' },
          Body: { Text: { Data: message.text, Charset: 'UTF-8' }, Html: { Data: message.html, Charset: 'UTF-8' } },
          Headers: Object.entries(message.headers).map(([Name, Value]) => ({ Name, Value })),
        },
      },
      EmailTags: Object.entries(message.tags).map(([Name, Value]) => ({ Name: tagSafe(Name), Value: tagSafe(Value) })),
      ...(this.options.configurationSetName ? { ConfigurationSetName: this.options.configurationSetName } : {}),
    });
    try {
      const output = await this.client.send(command, { abortSignal: context.signal });
      if (output.MessageId) return { kind: 'accepted', receipt: output.MessageId, providerStatus: output.$metadata.httpStatusCode ?? 200 };
      return { kind: 'failed', reason: 'SES: answer without a MessageId', outcomeUnknown: true, providerStatus: output.$metadata.httpStatusCode };
    } catch (error) {
      const e = error as { name?: string; message?: string; $fault?: 'client' | 'server'; $metadata?: { httpStatusCode?: number } };
      return classifySesError({
        name: e.name,
        message: e.message,
        status: e.$metadata?.httpStatusCode,
        fault: e.$fault,
        neverSent: neverSent(error),
        aborted: context.signal.aborted,
      });
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
