import { createHash, randomUUID } from 'node:crypto';
import { FakeHttpServer, type CannedResponse, type JsonReply, type RecordedRequest } from './fake-http.js';

/**
 * A local stand-in for the Resend API (POST /emails), following
 * https://resend.com/docs/api-reference/emails/send-email ,
 * https://resend.com/docs/api-reference/errors and
 * https://resend.com/docs/dashboard/emails/idempotency-keys :
 *
 * - `Authorization: Bearer <key>`: missing -> 401 missing_api_key, wrong -> 403 invalid_api_key;
 * - a `from` outside the verified domains -> 403 validation_error "domain is not verified";
 * - a malformed `to` -> 422 validation_error; tags outside [A-Za-z0-9_-] -> 422 validation_error;
 * - `Idempotency-Key`: same key and payload within the window -> the first
 *   response again and no second delivery; same key, other payload -> 409
 *   invalid_idempotent_request; same key while the first is in progress ->
 *   409 concurrent_idempotent_requests; longer than 256 -> 400 invalid_idempotency_key;
 * - every answer carries ratelimit-limit / ratelimit-remaining / ratelimit-reset.
 *
 * `deliveries` holds what it accepted (one per real delivery).
 */
export interface ResendDelivery {
  id: string;
  idempotencyKey: string | undefined;
  to: string[];
  subject: string;
  headers: Record<string, string>;
  tags: Array<{ name: string; value: string }>;
}

export interface FakeResendOptions {
  apiKey?: string;
  verifiedDomains?: string[];
  /** Time the fake spends on an accepted send (the key is "in progress" meanwhile). */
  processingMs?: number;
}

const EMAIL = /^(?:[^<>]*<)?[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>?$/;
const TAG = /^[A-Za-z0-9_-]{1,256}$/;

function error(status: number, name: string, message: string): JsonReply {
  return { status, body: { statusCode: status, message, name } };
}

export class FakeResend extends FakeHttpServer {
  readonly deliveries: ResendDelivery[] = [];
  private readonly keys = new Map<string, { hash: string; reply: JsonReply }>();
  private readonly inProgress = new Set<string>();
  readonly apiKey: string;
  private readonly verifiedDomains: string[];
  /** Time spent on each accepted send from now on (the request has arrived; the answer waits). */
  processingMs: number;

  constructor(options: FakeResendOptions = {}) {
    super();
    this.apiKey = options.apiKey ?? 're_test_key';
    this.verifiedDomains = options.verifiedDomains ?? ['example.com'];
    this.processingMs = options.processingMs ?? 0;
  }

  /** The next POST /emails (or request to `path`) answers with this instead. */
  override queue(response: CannedResponse, path = '/emails'): void {
    super.queue(response, path);
  }

  protected override async respond(request: RecordedRequest): Promise<JsonReply> {
    const reply = await this.route(request);
    return { ...reply, headers: { 'ratelimit-limit': '5', 'ratelimit-remaining': '4', 'ratelimit-reset': '1', ...reply.headers } };
  }

  private async route(request: RecordedRequest): Promise<JsonReply> {
    if (request.method !== 'POST' || request.path !== '/emails') {
      return error(404, 'not_found', 'The requested endpoint does not exist.');
    }
    const auth = request.headers['authorization'];
    if (!auth) return error(401, 'missing_api_key', 'Missing API key in the authorization header.');
    if (auth !== `Bearer ${this.apiKey}`) return error(403, 'invalid_api_key', 'API key is invalid.');

    const body = (request.body ?? {}) as {
      from?: string;
      to?: string | string[];
      subject?: string;
      headers?: Record<string, string>;
      tags?: Array<{ name: string; value: string }>;
    };
    const key = request.headers['idempotency-key'];
    if (key !== undefined && (key.length < 1 || key.length > 256)) {
      return error(400, 'invalid_idempotency_key', 'The key must be between 1-256 chars.');
    }
    if (!body.from || !body.to || !body.subject) {
      return error(422, 'missing_required_field', 'Missing `from`, `to` or `subject` field.');
    }
    const domain = /@([^>\s]+)>?$/.exec(body.from)?.[1] ?? '';
    if (!this.verifiedDomains.includes(domain)) {
      return error(403, 'validation_error', `The ${domain} domain is not verified. Please, add and verify your domain on https://resend.com/domains`);
    }
    const to = Array.isArray(body.to) ? body.to : [body.to];
    if (!to.every((address) => EMAIL.test(address))) {
      return error(
        422,
        'validation_error',
        'Invalid `to` field. The email address needs to follow the `email@example.com` or `Name <email@example.com>` format.',
      );
    }
    for (const tag of body.tags ?? []) {
      if (!TAG.test(tag.name) || !TAG.test(tag.value)) {
        return error(422, 'validation_error', 'Tags should only contain ASCII letters, numbers, underscores, or dashes.');
      }
    }

    if (key !== undefined) {
      const hash = createHash('sha256').update(JSON.stringify(body)).digest('hex');
      if (this.inProgress.has(key)) {
        return error(409, 'concurrent_idempotent_requests', 'Same idempotency key used while original request is still in progress.');
      }
      const seen = this.keys.get(key);
      if (seen) {
        if (seen.hash !== hash) {
          return error(409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload.');
        }
        return seen.reply;
      }
      this.inProgress.add(key);
      try {
        if (this.processingMs) await new Promise((r) => setTimeout(r, this.processingMs));
        const reply = this.deliver(body, to, key);
        this.keys.set(key, { hash, reply });
        return reply;
      } finally {
        this.inProgress.delete(key);
      }
    }
    return this.deliver(body, to, undefined);
  }

  private deliver(
    body: { subject?: string; headers?: Record<string, string>; tags?: Array<{ name: string; value: string }> },
    to: string[],
    key: string | undefined,
  ): JsonReply {
    const id = randomUUID();
    this.deliveries.push({ id, idempotencyKey: key, to, subject: body.subject ?? '', headers: body.headers ?? {}, tags: body.tags ?? [] });
    return { status: 200, body: { id } };
  }
}
