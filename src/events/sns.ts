import https from 'node:https';
import { withTimeout } from '../runtime/timeout.js';
import SnsPayloadValidator from 'sns-payload-validator';

/**
 * Amazon SNS messages (how SES publishes its events) verified before
 * anything in them is believed:
 *
 * 1. the topic is one this deployment subscribed to (`SES_WEBHOOK_TOPIC_ARN`):
 *    anyone can create a topic and subscribe our URL, and AWS signs their
 *    messages just as well;
 * 2. the message is recent (its signed `Timestamp`), so a captured message
 *    cannot be replayed later;
 * 3. the signing certificate URL is on the SNS endpoint of the topic's own
 *    region, and the signature (SignatureVersion 1: SHA1, 2: SHA256) checks
 *    out against that certificate: `sns-payload-validator`, which also
 *    insists on the `sns.<region>.amazonaws.com/SimpleNotificationService-*.pem`
 *    shape and caches certificates.
 *
 * A SubscriptionConfirmation is confirmed by fetching its SubscribeURL only
 * after all of that, and only on the topic region's SNS host.
 *
 * Network access (certificates, confirmation) goes through `agent`: unset in
 * production (the default HTTPS agent); tests pass an agent that routes
 * these exact AWS URLs to a local HTTPS server trusting a local certificate,
 * so no host rule is ever relaxed.
 */

export type SnsMessageType = 'Notification' | 'SubscriptionConfirmation' | 'UnsubscribeConfirmation';

export interface SnsEnvelope {
  Type: SnsMessageType;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
}

/** The message is not to be believed: the webhook answers 401 with `code`. */
export class SnsRejectedError extends Error {
  constructor(
    readonly code: 'invalid_signature' | 'stale_message' | 'topic_not_allowed',
    message: string,
  ) {
    super(message);
  }
}

/** AWS could not be reached to check (certificate) or confirm: not the sender's fault, try again later. */
export class SnsUnavailableError extends Error {}

export interface SnsVerifierOptions {
  /** Topic ARNs whose messages are accepted. */
  topicArns: string[];
  /** How old a message may be before it is refused as stale (default 1 hour: SNS's default retries end within a minute). */
  toleranceMs?: number;
  /** For certificate downloads and subscription confirmation; unset: the default HTTPS agent. */
  agent?: https.Agent;
  /** Longest wait for AWS (certificate, confirmation); default 10 s. */
  timeoutMs?: number;
  now?: () => number;
}

const TOPIC_ARN = /^arn:(aws|aws-cn|aws-us-gov):sns:([a-z]{2}(?:-[a-z]+)+-\d):(\d{12}):([A-Za-z0-9_-]{1,256}(?:\.fifo)?)$/;

export function parseTopicArn(arn: string): { partition: string; region: string } | undefined {
  const match = TOPIC_ARN.exec(arn);
  return match ? { partition: match[1]!, region: match[2]! } : undefined;
}

/** The one host SNS signs and confirms from for a topic's region. */
export function snsHostFor(arn: string): string | undefined {
  const topic = parseTopicArn(arn);
  if (!topic) return undefined;
  return `sns.${topic.region}.amazonaws.com${topic.partition === 'aws-cn' ? '.cn' : ''}`;
}

const REQUIRED = ['MessageId', 'TopicArn', 'Message', 'Timestamp', 'SignatureVersion', 'Signature', 'SigningCertURL'] as const;
const TYPES = new Set<string>(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation']);
// What sns-payload-validator rejects with when the message itself is wrong
// (anything else it throws is a failed certificate download).
const SIGNATURE_FAILURES = new Set(['Invalid Signature', 'Invalid SigningCertURL', 'Invalid SignatureVersion', 'Invalid Type']);

export class SnsVerifier {
  private readonly topics: Set<string>;
  private readonly validator: SnsPayloadValidator;
  private readonly toleranceMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly options: SnsVerifierOptions) {
    for (const arn of options.topicArns) if (!parseTopicArn(arn)) throw new Error(`not an SNS topic ARN: ${arn}`);
    this.topics = new Set(options.topicArns);
    this.validator = new SnsPayloadValidator({ useCache: true, maxCerts: 100, ...(options.agent ? { requestAgent: options.agent } : {}) });
    this.toleranceMs = options.toleranceMs ?? 60 * 60 * 1000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The verified envelope, or SnsRejectedError (401) / SnsUnavailableError (503). */
  async verify(body: Record<string, unknown>): Promise<SnsEnvelope> {
    const type = body.Type;
    if (typeof type !== 'string' || !TYPES.has(type)) throw new SnsRejectedError('invalid_signature', 'not an SNS message: Type is missing or unknown');
    for (const field of REQUIRED) {
      // Message may be empty text; every other field has content.
      if (typeof body[field] !== 'string' || (field !== 'Message' && (body[field] as string).length === 0)) {
        throw new SnsRejectedError('invalid_signature', `unsigned or incomplete SNS message: ${field} is missing`);
      }
    }
    const envelope = body as unknown as SnsEnvelope;
    if (!this.topics.has(envelope.TopicArn)) {
      throw new SnsRejectedError('topic_not_allowed', 'the message comes from a topic this deployment did not subscribe to');
    }
    const sent = Date.parse(envelope.Timestamp);
    const age = this.now() - sent;
    if (Number.isNaN(sent) || age > this.toleranceMs || age < -5 * 60 * 1000) {
      throw new SnsRejectedError('stale_message', 'the message timestamp is outside the accepted window');
    }
    const host = snsHostFor(envelope.TopicArn)!;
    if (!isHttpsUrlOn(envelope.SigningCertURL, host)) {
      throw new SnsRejectedError('invalid_signature', `the signing certificate is not on ${host}`);
    }
    try {
      await this.withTimeout(this.validator.validate(envelope as unknown as SnsPayloadValidator.SnsPayload), 'certificate download');
    } catch (error) {
      if (error instanceof SnsUnavailableError) throw error;
      const message = (error as Error)?.message ?? '';
      if (SIGNATURE_FAILURES.has(message)) throw new SnsRejectedError('invalid_signature', `SNS signature check failed: ${message}`);
      throw new SnsUnavailableError(`could not fetch the SNS signing certificate: ${message}`);
    }
    return envelope;
  }

  /** Confirm a verified SubscriptionConfirmation by fetching its SubscribeURL (only on the topic region's SNS host). */
  async confirmSubscription(envelope: SnsEnvelope): Promise<void> {
    const host = snsHostFor(envelope.TopicArn)!;
    const url = envelope.SubscribeURL;
    if (!url || !isHttpsUrlOn(url, host)) throw new SnsRejectedError('invalid_signature', `the SubscribeURL is not on ${host}`);
    const parsed = new URL(url);
    if (parsed.searchParams.get('Action') !== 'ConfirmSubscription' || parsed.searchParams.get('TopicArn') !== envelope.TopicArn) {
      throw new SnsRejectedError('invalid_signature', 'the SubscribeURL does not confirm this topic');
    }
    const status = await this.withTimeout(
      new Promise<number>((resolve, reject) => {
        const request = https.get(url, this.options.agent ? { agent: this.options.agent } : {}, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
          response.on('error', reject);
        });
        request.on('error', reject);
      }),
      'subscription confirmation',
    ).catch((error: unknown) => {
      if (error instanceof SnsUnavailableError) throw error;
      throw new SnsUnavailableError(`could not confirm the subscription: ${(error as Error)?.message ?? String(error)}`);
    });
    if (status !== 200) throw new SnsUnavailableError(`SNS answered ${status} to the subscription confirmation`);
  }

  private withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
    return withTimeout(work, this.timeoutMs, () => new SnsUnavailableError(`${what} timed out after ${this.timeoutMs} ms`));
  }
}

function isHttpsUrlOn(value: string, host: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.hostname === host && url.port === '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}
