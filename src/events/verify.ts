import { createHash, timingSafeEqual } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/**
 * Checks that a webhook request really comes from the provider. Each
 * failure is a WebhookRejected: the route answers 401 with its code and
 * stores nothing.
 */
export class WebhookRejected extends Error {
  constructor(
    readonly code: 'webhook_not_configured' | 'missing_signature' | 'invalid_signature' | 'stale_message' | 'invalid_credentials' | 'topic_not_allowed',
    message: string,
  ) {
    super(message);
  }
}

type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * Resend signs webhooks with Svix: `svix-id`, `svix-timestamp` and
 * `svix-signature` (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, several
 * while a secret rotates) over the raw body, with a 5-minute tolerance on the
 * timestamp. Svix's own `svix` package (v1) is a thin wrapper over
 * `standardwebhooks` that renames these headers; this does the same without
 * the API client around it (svix v2 needs Node 22).
 */
export class ResendSignature {
  private readonly webhook: Webhook;

  /** Throws when `secret` is not a Svix signing secret (`whsec_` + base64). */
  constructor(secret: string) {
    this.webhook = new Webhook(secret);
  }

  /** The verified `svix-id` (the event's id), or WebhookRejected. */
  verify(rawBody: string, headers: Headers): string {
    const id = header(headers, 'svix-id');
    const timestamp = header(headers, 'svix-timestamp');
    const signature = header(headers, 'svix-signature');
    if (!id || !timestamp || !signature) throw new WebhookRejected('missing_signature', 'missing svix-id, svix-timestamp or svix-signature header');
    try {
      this.webhook.verify(rawBody, { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, { jsonParse: false });
    } catch (error) {
      const message = (error as Error)?.message ?? '';
      if (error instanceof WebhookVerificationError && /too old|too new/.test(message)) {
        throw new WebhookRejected('stale_message', 'the svix-timestamp is outside the 5-minute tolerance');
      }
      throw new WebhookRejected('invalid_signature', 'the svix-signature does not match the body');
    }
    return id;
  }
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Postmark has no signatures: its webhooks authenticate with HTTP basic
 * auth credentials put in the webhook URL (`https://user:pass@host/...`).
 * Compared as hashes, so the check is constant-time whatever the lengths.
 */
export class PostmarkCredentials {
  private readonly expected: Buffer;

  constructor(user: string, password: string) {
    this.expected = digest(`${user}:${password}`);
  }

  verify(headers: Headers): void {
    const value = header(headers, 'authorization');
    const match = value ? /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(value) : null;
    if (!match) throw new WebhookRejected('invalid_credentials', 'missing Authorization: Basic credentials');
    const given = digest(Buffer.from(match[1]!, 'base64').toString('utf8'));
    if (!timingSafeEqual(given, this.expected)) throw new WebhookRejected('invalid_credentials', 'wrong webhook credentials');
  }
}
