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
 * - success -> 200 `{To, SubmittedAt, MessageID, ErrorCode: 0, Message: "OK"}`.
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

function apiError(status: number, errorCode: number, message: string): JsonReply {
  return { status, body: { ErrorCode: errorCode, Message: message } };
}

export class FakePostmark extends FakeHttpServer {
  readonly outbound: PostmarkOutbound[] = [];
  readonly serverToken: string;

  constructor(private readonly options: FakePostmarkOptions = {}) {
    super();
    this.serverToken = options.serverToken ?? 'pm-test-token';
  }

  /** The next request to `path` (default POST /email) answers with this instead. */
  override queue(response: CannedResponse, path = '/email'): void {
    super.queue(response, path);
  }

  protected override respond(request: RecordedRequest): JsonReply {
    if (request.headers['x-postmark-server-token'] !== this.serverToken) {
      return apiError(401, 10, 'Request does not contain a valid Server token.');
    }
    if (request.method === 'POST' && request.path === '/email') return this.send(request);
    if (request.method === 'GET' && request.path === '/messages/outbound') return this.search(request.query);
    return { status: 404, body: { ErrorCode: 404, Message: 'Not found' } };
  }

  private send(request: RecordedRequest): JsonReply {
    const body = (request.body ?? {}) as {
      From?: string;
      To?: string;
      Subject?: string;
      Tag?: string;
      Metadata?: Record<string, string>;
      Headers?: Array<{ Name: string; Value: string }>;
      MessageStream?: string;
    };
    const from = EMAIL.exec(body.From ?? '')?.[1];
    const domain = from?.split('@')[1] ?? '';
    if (!from || !(this.options.senderDomains ?? ['example.com']).includes(domain)) {
      return apiError(
        422,
        400,
        `The 'From' address you supplied (${body.From ?? ''}) is not a Sender Signature on your account. Please add and confirm this address in order to be able to use it in the 'From' field of your messages.`,
      );
    }
    const to = EMAIL.exec(body.To ?? '')?.[1];
    if (!to) return apiError(422, 300, `Invalid 'To' address: '${body.To ?? ''}'.`);
    if ((this.options.inactiveRecipients ?? []).includes(to)) {
      return apiError(
        422,
        406,
        'You tried to send to recipient(s) that have been marked as inactive. Found inactive addresses: ' +
          `${to}. Inactive recipients are ones that have generated a hard bounce, a spam complaint, or a manual suppression.`,
      );
    }
    const metadata = body.Metadata ?? {};
    if (Object.keys(metadata).length > 10 || Object.entries(metadata).some(([k, v]) => k.length > 20 || String(v).length > 80)) {
      return apiError(422, 300, 'Invalid metadata: at most 10 fields, keys up to 20 and values up to 80 characters.');
    }
    const message: PostmarkOutbound = {
      MessageID: randomUUID(),
      To: [{ Email: to, Name: '' }],
      Recipients: [to],
      From: body.From ?? '',
      Subject: body.Subject ?? '',
      Tag: body.Tag ?? '',
      Metadata: metadata,
      Headers: body.Headers ?? [],
      MessageStream: body.MessageStream ?? 'outbound',
      ReceivedAt: new Date().toISOString(),
      Status: 'Sent',
    };
    this.outbound.push(message);
    return {
      status: 200,
      body: { To: body.To, SubmittedAt: message.ReceivedAt, MessageID: message.MessageID, ErrorCode: 0, Message: 'OK' },
    };
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
