import { randomUUID } from 'node:crypto';
import { FakeHttpServer, type CannedResponse, type JsonReply, type RecordedRequest } from './fake-http.js';

/**
 * A local stand-in for the Postmark server API, following
 * https://postmarkapp.com/developer/api/email-api (POST /email),
 * https://postmarkapp.com/developer/api/messages-api (GET /messages/outbound,
 * with `metadata_<key>=<value>` filters) and the error codes of
 * https://postmarkapp.com/developer/api/overview#error-codes :
 *
 * - `X-Postmark-Server-Token` missing or wrong -> 401, ErrorCode 10;
 * - `From` not a confirmed sender signature -> 422, ErrorCode 400;
 * - malformed `To` -> 422, ErrorCode 300; an inactive recipient -> 422, ErrorCode 406;
 * - success -> 200 `{To, SubmittedAt, MessageID, ErrorCode: 0, Message: "OK"}`;
 * - POST /email/batch (https://postmarkapp.com/developer/user-guide/send-email-with-api/batch-emails):
 *   an array of up to 500 messages (more -> 422, ErrorCode 410 "Too many
 *   batch messages"), each checked like /email; the answer is 200 with one
 *   result per message, in order: `{ErrorCode: 0, Message: "OK", MessageID,
 *   SubmittedAt, To}` or `{ErrorCode, Message, To}` (an inactive recipient:
 *   406 in its slot). `scriptBatch()` makes chosen slots of the next batch
 *   answer a given ErrorCode (e.g. 429) instead.
 *
 * `outbound` holds what it accepted, searchable by metadata like the real one.
 */
export interface PostmarkOutbound {
  MessageID: string;
  To: Array<{ Email: string; Name: string }>;
  Recipients: string[];
  From: string;
  Subject: string;
  Tag: string;
  Metadata: Record<string, string>;
  Headers: Array<{ Name: string; Value: string }>;
  MessageStream: string;
  ReceivedAt: string;
  Status: string;
}

export interface FakePostmarkOptions {
  serverToken?: string;
  senderDomains?: string[];
  inactiveRecipients?: string[];
}

const EMAIL = /^(?:[^<>]*<)?([^\s@<>]+@[^\s@<>]+\.[^\s@<>]+)>?$/;

/** Messages per batch call (https://postmarkapp.com/developer/api/email-api#send-batch-emails). */
export const FAKE_POSTMARK_MAX_BATCH = 500;

interface MessageBody {
  From?: string;
  To?: string;
  Subject?: string;
  Tag?: string;
  Metadata?: Record<string, string>;
  Headers?: Array<{ Name: string; Value: string }>;
  MessageStream?: string;
}

/** A per-message refusal: the ErrorCode and text Postmark gives it. */
interface Refusal {
  ErrorCode: number;
  Message: string;
}

/** One slot of a batch answer. */
export interface PostmarkBatchResult {
  ErrorCode: number;
  Message: string;
  MessageID?: string;
  SubmittedAt?: string;
  To: string;
}

function apiError(status: number, errorCode: number, message: string): JsonReply {
  return { status, body: { ErrorCode: errorCode, Message: message } };
}

export class FakePostmark extends FakeHttpServer {
  readonly outbound: PostmarkOutbound[] = [];
  readonly serverToken: string;
  private scripted: Array<Map<number, Refusal>> = [];

  constructor(private readonly options: FakePostmarkOptions = {}) {
    super();
    this.serverToken = options.serverToken ?? 'pm-test-token';
  }

  /** The next request to `path` (default POST /email) answers with this instead. */
  override queue(response: CannedResponse, path = '/email'): void {
    super.queue(response, path);
  }

  /**
   * In the next POST /email/batch, the message at each given index (0-based)
   * answers this ErrorCode in its slot and is not sent; the others go as usual.
   */
  scriptBatch(slots: Record<number, { ErrorCode: number; Message?: string }>): void {
    this.scripted.push(
      new Map(Object.entries(slots).map(([index, slot]) => [Number(index), { ErrorCode: slot.ErrorCode, Message: slot.Message ?? `Scripted ErrorCode ${slot.ErrorCode}` }])),
    );
  }

  protected override respond(request: RecordedRequest): JsonReply {
    if (request.headers['x-postmark-server-token'] !== this.serverToken) {
      return apiError(401, 10, 'Request does not contain a valid Server token.');
    }
    if (request.method === 'POST' && request.path === '/email') return this.send(request);
    if (request.method === 'POST' && request.path === '/email/batch') return this.sendBatch(request);
    if (request.method === 'GET' && request.path === '/messages/outbound') return this.search(request.query);
    return { status: 404, body: { ErrorCode: 404, Message: 'Not found' } };
  }

  private send(request: RecordedRequest): JsonReply {
    const body = (request.body ?? {}) as MessageBody;
    const refusal = this.refusal(body);
    if (refusal) return apiError(422, refusal.ErrorCode, refusal.Message);
    const message = this.record(body);
    return {
      status: 200,
      body: { To: body.To, SubmittedAt: message.ReceivedAt, MessageID: message.MessageID, ErrorCode: 0, Message: 'OK' },
    };
  }

  private sendBatch(request: RecordedRequest): JsonReply {
    if (!Array.isArray(request.body)) return apiError(422, 403, 'Incompatible JSON: the batch must be an array of messages.');
    const messages = request.body as MessageBody[];
    if (messages.length > FAKE_POSTMARK_MAX_BATCH) {
      return apiError(422, 410, `Too many batch messages: you may send up to ${FAKE_POSTMARK_MAX_BATCH} messages in a batch call.`);
    }
    const scripted = this.scripted.shift() ?? new Map<number, Refusal>();
    const results = messages.map((raw, index): PostmarkBatchResult => {
      const body = raw ?? {};
      const refusal = scripted.get(index) ?? this.refusal(body);
      if (refusal) return { ErrorCode: refusal.ErrorCode, Message: refusal.Message, To: body.To ?? '' };
      const message = this.record(body);
      return { ErrorCode: 0, Message: 'OK', MessageID: message.MessageID, SubmittedAt: message.ReceivedAt, To: body.To ?? '' };
    });
    return { status: 200, body: results };
  }

  /** What Postmark would refuse about one message, if anything. */
  private refusal(body: MessageBody): Refusal | undefined {
    const from = EMAIL.exec(body.From ?? '')?.[1];
    const domain = from?.split('@')[1] ?? '';
    if (!from || !(this.options.senderDomains ?? ['example.com']).includes(domain)) {
      return {
        ErrorCode: 400,
        Message: `The 'From' address you supplied (${body.From ?? ''}) is not a Sender Signature on your account. Please add and confirm this address in order to be able to use it in the 'From' field of your messages.`,
      };
    }
    const to = EMAIL.exec(body.To ?? '')?.[1];
    if (!to) return { ErrorCode: 300, Message: `Invalid 'To' address: '${body.To ?? ''}'.` };
    if ((this.options.inactiveRecipients ?? []).includes(to)) {
      return {
        ErrorCode: 406,
        Message:
          'You tried to send to recipient(s) that have been marked as inactive. Found inactive addresses: ' +
          `${to}. Inactive recipients are ones that have generated a hard bounce, a spam complaint, or a manual suppression.`,
      };
    }
    const metadata = body.Metadata ?? {};
    if (Object.keys(metadata).length > 10 || Object.entries(metadata).some(([k, v]) => k.length > 20 || String(v).length > 80)) {
      return { ErrorCode: 300, Message: 'Invalid metadata: at most 10 fields, keys up to 20 and values up to 80 characters.' };
    }
    return undefined;
  }

  private record(body: MessageBody): PostmarkOutbound {
    const to = EMAIL.exec(body.To ?? '')![1]!;
    const message: PostmarkOutbound = {
      MessageID: randomUUID(),
      To: [{ Email: to, Name: '' }],
      Recipients: [to],
      From: body.From ?? '',
      Subject: body.Subject ?? '',
      Tag: body.Tag ?? '',
      Metadata: body.Metadata ?? {},
      Headers: body.Headers ?? [],
      MessageStream: body.MessageStream ?? 'outbound',
      ReceivedAt: new Date().toISOString(),
      Status: 'Sent',
    };
    this.outbound.push(message);
    return message;
  }

  private search(query: URLSearchParams): JsonReply {
    const count = Number(query.get('count'));
    const offset = Number(query.get('offset'));
    if (!query.has('count') || !query.has('offset') || !(count >= 1 && count <= 500) || offset < 0) {
      return apiError(422, 1, "The 'count' and 'offset' query parameters are required (count up to 500).");
    }
    let hits = [...this.outbound].reverse(); // newest first, like the real one
    for (const [name, value] of query) {
      if (name.startsWith('metadata_')) {
        const key = name.slice('metadata_'.length);
        hits = hits.filter((m) => m.Metadata[key] === value);
      }
      if (name === 'tag') hits = hits.filter((m) => m.Tag === value);
      if (name === 'recipient') hits = hits.filter((m) => m.Recipients.includes(value));
    }
    const page = hits.slice(offset, offset + count).map(({ Headers: _headers, ...summary }) => summary);
    return { status: 200, body: { TotalCount: hits.length, Messages: page } };
  }
}
