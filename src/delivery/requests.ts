import type { LeasedIntent } from '../tables/outbox.js';

/** How an account sends, as a round plans its requests. */
export interface RequestShape {
  /** Emails per provider request (1: no batches). */
  batch: number;
  /** The provider deduplicates a batch on its key (EmailGateway.batchIdempotent). */
  keyed: boolean;
}

/** One provider request a round makes: one intent, or a batch. */
export type SendRequest =
  | { kind: 'single'; intent: LeasedIntent }
  /** `batchId` set: an open batch sent again whole (same id, key and members in order); unset: a new batch. */
  | { kind: 'batch'; batchId: string | undefined; members: LeasedIntent[] };

/**
 * The requests that send one account's leased intents, in as few as its
 * batch size allows:
 * - an open batch leased whole goes again as it was (its members in their
 *   recorded order);
 * - on a keyed account an intent whose earlier outcome is unknown goes
 *   singly, under its own key: only that key can settle what it may
 *   already have delivered (a new batch's key could not);
 * - so does an intent a refused batch could not tell apart from the email
 *   at fault (sendAlone);
 * - the rest go in chunks of `batch`, in lease order; a chunk of one is a
 *   single send.
 */
export function planRequests(intents: readonly LeasedIntent[], shape: RequestShape): SendRequest[] {
  if (shape.batch <= 1) return intents.map((intent) => ({ kind: 'single', intent }));
  const requests: SendRequest[] = [];
  const open = new Map<string, LeasedIntent[]>();
  const fresh: LeasedIntent[] = [];
  for (const intent of intents) {
    if (intent.batchId !== null) {
      const members = open.get(intent.batchId) ?? [];
      members.push(intent);
      open.set(intent.batchId, members);
    } else if ((shape.keyed && intent.previousOutcomeUnknown) || intent.sendAlone) {
      requests.push({ kind: 'single', intent });
    } else {
      fresh.push(intent);
    }
  }
  // Open batches first: when permits run short the requests at the end wait, and those are new ones.
  const resends: SendRequest[] = [];
  for (const [batchId, members] of open) {
    members.sort((a, b) => (a.batchPosition ?? 0) - (b.batchPosition ?? 0));
    resends.push({ kind: 'batch', batchId, members });
  }
  requests.unshift(...resends);
  for (let i = 0; i < fresh.length; i += shape.batch) {
    const chunk = fresh.slice(i, i + shape.batch);
    requests.push(chunk.length === 1 ? { kind: 'single', intent: chunk[0]! } : { kind: 'batch', batchId: undefined, members: chunk });
  }
  return requests;
}

/** The intents a request carries. */
export function membersOf(request: SendRequest): LeasedIntent[] {
  return request.kind === 'single' ? [request.intent] : request.members;
}

/**
 * The planned requests less the intents that will not be sent (a suppressed
 * recipient, a message that could not be rendered), without planning them
 * again: a request with none left is dropped; an open batch keeps its id
 * and the order of its members; a new batch left with one email is a
 * single send, as planRequests would have made it.
 */
export function withoutUnsent(requests: readonly SendRequest[], sendable: (intent: LeasedIntent) => boolean): SendRequest[] {
  const out: SendRequest[] = [];
  for (const request of requests) {
    if (request.kind === 'single') {
      if (sendable(request.intent)) out.push(request);
      continue;
    }
    const members = request.members.filter(sendable);
    if (members.length === request.members.length) out.push(request);
    else if (members.length === 1 && request.batchId === undefined) out.push({ kind: 'single', intent: members[0]! });
    else if (members.length > 0) out.push({ ...request, members });
  }
  return out;
}
