import { createHash, randomUUID } from 'node:crypto';
import { FakeHttpServer, type CannedResponse, type JsonReply, type RecordedRequest } from './fake-http.js';

/**
 * A local stand-in for the Resend API (POST /emails and POST /emails/batch),
 * following https://resend.com/docs/api-reference/emails/send-email ,
 * https://resend.com/docs/api-reference/emails/send-batch-emails ,
 * https://resend.com/docs/dashboard/emails/batch-validation-modes ,
 * https://resend.com/docs/api-reference/errors ,
 * https://resend.com/docs/api-reference/rate-limit and
 * https://resend.com/docs/dashboard/emails/idempotency-keys :
 *
 * - `Authorization: Bearer <key>`: missing -> 401 missing_api_key, wrong -> 403 invalid_api_key;
 * - a `from` outside the verified domains -> 403 validation_error "domain is not verified";
 * - a malformed `to` -> 422 validation_error; tags outside [A-Za-z0-9_-] -> 422 validation_error;
 * - `Idempotency-Key`: same key and payload within the window -> the first
 *   response again and no second delivery; same key, other payload -> 409
 *   invalid_idempotent_request; same key while the first is in progress ->
 *   409 concurrent_idempotent_requests; longer than 256 -> 400 invalid_idempotency_key.
 *   Keys are kept per endpoint; for a batch the payload is the whole array;
 * - `/emails/batch`: an array of 1..100 emails (else 422 validation_error).
 *   `x-batch-validation: strict` (the default): one invalid email refuses the
 *   whole batch with that email's own error, naming it as `emails[<i>]`
 *   (0-based). Resend documents no form for naming the email in strict
 *   mode (see src/providers/resend-batch.ts); this is one of the forms the
 *   adapter reads. `permissive`: the valid ones are delivered, `data` lists
 *   their ids in order and `errors: [{ index, message }]` the others;
 * - `requestsPerSecond` (per team, so for the whole fake): a request over it
 *   gets 429 rate_limit_exceeded with `retry-after`, and delivers nothing;
 *   every answer carries ratelimit-limit / ratelimit-remaining / ratelimit-reset
 *   (without the option: a fixed 5 / 4 / 1).
 *
 * `deliveries` holds what it accepted (one per real delivery).
 */
export interface ResendDelivery {
  id: string;
  /** The Idempotency-Key of the `/emails` request that delivered it (a batch member has none of its own). */
  idempotencyKey: string | undefined;
  to: string[];
  subject: string;
  headers: Record<string, string>;
  tags: Array<{ name: string; value: string }>;
  /** Delivered by `/emails/batch`: the batch request's Idempotency-Key, and the email's place in it. */
  batchKey?: string | undefined;
  batchIndex?: number;
}

export interface FakeResendOptions {
  apiKey?: string;
  verifiedDomains?: string[];
  /** Time the fake spends on an accepted send (the key is "in progress" meanwhile). */
  processingMs?: number;
  /** The team's rate limit: requests per one-second window, over every endpoint. */
  requestsPerSecond?: number;
  /** The fake's clock (ms), for the rate-limit windows. */
  now?: () => number;
}

/** Emails per batch request (https://resend.com/docs/api-reference/emails/send-batch-emails). */
export const FAKE_RESEND_MAX_BATCH = 100;

const EMAIL = /^(?:[^<>]*<)?[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>?$/;
const TAG = /^[A-Za-z0-9_-]{1,256}$/;

interface EmailBody {
  from?: string;
  to?: string | string[];
  subject?: string;
  headers?: Record<string, string>;
  tags?: Array<{ name: string; value: string }>;
}

interface Refusal {
  status: number;
  name: string;
  message: string;
}

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
  /** The rate limit from now on (undefined: none). */
  requestsPerSecond: number | undefined;
  private readonly now: () => number;
  private window = { start: Number.NEGATIVE_INFINITY, used: 0 };

  constructor(options: FakeResendOptions = {}) {
    super();
    this.apiKey = options.apiKey ?? 're_test_key';
    this.verifiedDomains = options.verifiedDomains ?? ['example.com'];
    this.processingMs = options.processingMs ?? 0;
    this.requestsPerSecond = options.requestsPerSecond;
    this.now = options.now ?? Date.now;
  }

  /** The next POST /emails (or request to `path`) answers with this instead. */
  override queue(response: CannedResponse, path = '/emails'): void {
    super.queue(response, path);
  }

  /** Requests received per path (canned answers included). */
  requestCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const request of this.requests) counts[request.path] = (counts[request.path] ?? 0) + 1;
    return counts;
  }

  protected override async respond(request: RecordedRequest): Promise<JsonReply> {
    const limit = this.rateLimit();
    if (limit.exceeded) {
      return {
        ...error(429, 'rate_limit_exceeded', `Too many requests. You can only make ${this.requestsPerSecond} requests per second.`),
        headers: { ...limit.headers, 'retry-after': limit.headers['ratelimit-reset']! },
      };
    }
    const reply = await this.route(request);
    return { ...reply, headers: { ...limit.headers, ...reply.headers } };
  }

  /** Counts this request against the current one-second window. */
  private rateLimit(): { exceeded: boolean; headers: Record<string, string> } {
    const limit = this.requestsPerSecond;
    if (limit === undefined) return { exceeded: false, headers: { 'ratelimit-limit': '5', 'ratelimit-remaining': '4', 'ratelimit-reset': '1' } };
    const now = this.now();
    if (now - this.window.start >= 1000) this.window = { start: now, used: 0 };
    const exceeded = this.window.used >= limit;
    if (!exceeded) this.window.used++;
    const reset = Math.max(1, Math.ceil((this.window.start + 1000 - now) / 1000));
    return {
      exceeded,
      headers: {
        'ratelimit-limit': String(limit),
        'ratelimit-remaining': String(limit - this.window.used),
        'ratelimit-reset': String(reset),
      },
    };
  }

  private async route(request: RecordedRequest): Promise<JsonReply> {
    const batch = request.path === '/emails/batch';
    if (request.method !== 'POST' || (request.path !== '/emails' && !batch)) {
      return error(404, 'not_found', 'The requested endpoint does not exist.');
    }
    const auth = request.headers['authorization'];
    if (!auth) return error(401, 'missing_api_key', 'Missing API key in the authorization header.');
    if (auth !== `Bearer ${this.apiKey}`) return error(403, 'invalid_api_key', 'API key is invalid.');

    const key = request.headers['idempotency-key'];
    if (key !== undefined && (key.length < 1 || key.length > 256)) {
      return error(400, 'invalid_idempotency_key', 'The key must be between 1-256 chars.');
    }
    return batch ? this.sendBatch(request, key) : this.sendOne(request, key);
  }

  private async sendOne(request: RecordedRequest, key: string | undefined): Promise<JsonReply> {
    const body = (request.body ?? {}) as EmailBody;
    const refusal = this.refusal(body);
    if (refusal) return error(refusal.status, refusal.name, refusal.message);
    return this.once('/emails', key, body, () => {
      const id = this.deliver(body, { idempotencyKey: key });
      return { status: 200, body: { id } };
    });
  }

  private async sendBatch(request: RecordedRequest, key: string | undefined): Promise<JsonReply> {
    const emails = request.body;
    if (!Array.isArray(emails)) return error(422, 'validation_error', 'The `request.body` field must be an `array`.');
    if (emails.length === 0 || emails.length > FAKE_RESEND_MAX_BATCH) {
      return error(422, 'validation_error', `A batch holds 1 to ${FAKE_RESEND_MAX_BATCH} emails, not ${emails.length}.`);
    }
    const permissive = request.headers['x-batch-validation'] === 'permissive';
    const refusals = emails.map((email) => this.refusal((email ?? {}) as EmailBody));
    if (!permissive) {
      const at = refusals.findIndex((r) => r !== undefined);
      if (at >= 0) {
        const refusal = refusals[at]!;
        return error(refusal.status, refusal.name, `\`emails[${at}]\`: ${refusal.message}`);
      }
    }
    return this.once('/emails/batch', key, emails, () => {
      const data: Array<{ id: string }> = [];
      const errors: Array<{ index: number; message: string }> = [];
      emails.forEach((email, index) => {
        const refusal = refusals[index];
        if (refusal) errors.push({ index, message: refusal.message });
        else data.push({ id: this.deliver(email as EmailBody, { idempotencyKey: undefined, batchKey: key, batchIndex: index }) });
      });
      return { status: 200, body: permissive ? { data, errors } : { data } };
    });
  }

  /** What Resend would refuse about one email, if anything. */
  private refusal(body: EmailBody): Refusal | undefined {
    if (!body.from || !body.to || !body.subject) {
      return { status: 422, name: 'missing_required_field', message: 'Missing `from`, `to` or `subject` field.' };
    }
    const domain = /@([^>\s]+)>?$/.exec(body.from)?.[1] ?? '';
    if (!this.verifiedDomains.includes(domain)) {
      return {
        status: 403,
        name: 'validation_error',
        message: `The ${domain} domain is not verified. Please, add and verify your domain on https://resend.com/domains`,
      };
    }
    const to = Array.isArray(body.to) ? body.to : [body.to];
    if (!to.every((address) => EMAIL.test(address))) {
      return {
        status: 422,
        name: 'validation_error',
        message: 'Invalid `to` field. The email address needs to follow the `email@example.com` or `Name <email@example.com>` format.',
      };
    }
    for (const tag of body.tags ?? []) {
      if (!TAG.test(tag.name) || !TAG.test(tag.value)) {
        return { status: 422, name: 'validation_error', message: 'Tags should only contain ASCII letters, numbers, underscores, or dashes.' };
      }
    }
    return undefined;
  }

  /** Runs `deliver` once per key and payload (Resend's idempotency), or always without a key. */
  private async once(path: string, key: string | undefined, payload: unknown, deliver: () => JsonReply): Promise<JsonReply> {
    if (key === undefined) return deliver();
    const slot = `${path} ${key}`;
    const hash = createHash('sha256').update(JSON.stringify(payload)).digest('hex');
    if (this.inProgress.has(slot)) {
      return error(409, 'concurrent_idempotent_requests', 'Same idempotency key used while original request is still in progress.');
    }
    const seen = this.keys.get(slot);
    if (seen) {
      if (seen.hash !== hash) return error(409, 'invalid_idempotent_request', 'Same idempotency key used with a different request payload.');
      return seen.reply;
    }
    this.inProgress.add(slot);
    try {
      if (this.processingMs) await new Promise((r) => setTimeout(r, this.processingMs));
      const reply = deliver();
      this.keys.set(slot, { hash, reply });
      return reply;
    } finally {
      this.inProgress.delete(slot);
    }
  }

  private deliver(body: EmailBody, how: Pick<ResendDelivery, 'idempotencyKey' | 'batchKey' | 'batchIndex'>): string {
    const id = randomUUID();
    const to = Array.isArray(body.to) ? body.to : [body.to ?? ''];
    this.deliveries.push({ id, ...how, to, subject: body.subject ?? '', headers: body.headers ?? {}, tags: body.tags ?? [] });
    return id;
  }
}
