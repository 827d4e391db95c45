import { classifyResendError, type ResendErrorInput } from './classify-resend.js';
import type { BatchMemberResult, BatchResult } from './gateway.js';
import { redactAddresses } from './provider-common.js';

/**
 * Resend's answer to one `POST /emails/batch`
 * (https://resend.com/docs/api-reference/emails/send-batch-emails), sent in
 * strict validation mode, turned into one result per member. Pure: the
 * adapter passes what the SDK returned.
 *
 * Strict mode is atomic: "if any email in the batch fails validation, the
 * entire batch is rejected" and "only the validation error causing the
 * failure is returned"
 * (https://resend.com/docs/dashboard/emails/batch-validation-modes). Resend
 * documents no form in which that one error names the email at fault: the
 * only member index it documents is permissive mode's
 * `errors: [{ index, message }]` (0-based), and resend-node#461 asks for the
 * index to be added to strict errors. The one batch refusal seen in the wild
 * names its field by path: "The `request.body` field must be an `array`."
 * (resend-php#67). So a refusal is searched for a member in every form that
 * could carry one (see MEMBER_PATTERNS); when none is found the whole batch
 * is treated as refused without a culprit.
 */
export interface ResendBatchAnswer {
  /** `{ data: [{ id }] }` on a 200 (the SDK keeps the body as is). */
  data: { data?: Array<{ id?: unknown } | null> } | null;
  /** The error body as Resend sent it (name, message, statusCode, and anything else). */
  error: { name?: string; message?: string; statusCode?: number | null; errors?: unknown } | null;
  headers: Record<string, string> | null;
}

/** Error names that mean "an email of the batch is invalid" (strict validation). */
const REFUSALS = new Set(['validation_error', 'missing_required_field', 'invalid_parameter', 'invalid_attachment', 'invalid_from_address']);
/** 422s about the key or the account, not an email. */
const ACCOUNT_422 = new Set(['invalid_access', 'invalid_region']);

/**
 * Ways a refusal may name the email at fault, 0-based like permissive
 * mode's `index`. A recipient index inside one email (`to[0]`) never
 * matches: each form needs the batch itself (`emails`, `request.body`) or a
 * bare `[n].field` path before the number.
 */
const MEMBER_PATTERNS = [
  /\b(?:emails|request\.body|body)\s*\[\s*(\d+)\s*\]/gi, // emails[3].to, `request.body[3]`
  /\b(?:emails|request\.body|body)\.(\d+)\b/gi, // emails.3.to, request.body.3
  /(?:^|[\s`'"(])\[(\d+)\]\.[A-Za-z_]/g, // `[3].to`
  /\bindex\s*[:=#]?\s*(\d+)\b/gi, // "at index 3", "index: 3"
];

/** The members a refusal names, each with the text about it. */
export function namedMembers(error: NonNullable<ResendBatchAnswer['error']>, count: number): Map<number, string> {
  const named = new Map<number, string>();
  const inRange = (n: number) => Number.isInteger(n) && n >= 0 && n < count;
  if (Array.isArray(error.errors)) {
    for (const entry of error.errors as Array<{ index?: unknown; message?: unknown }>) {
      const index = typeof entry?.index === 'number' ? entry.index : Number.NaN;
      if (inRange(index) && !named.has(index)) named.set(index, typeof entry.message === 'string' ? entry.message : (error.message ?? ''));
    }
  }
  const message = error.message ?? '';
  for (const pattern of MEMBER_PATTERNS) {
    for (const match of message.matchAll(pattern)) {
      const index = Number(match[1]);
      if (inRange(index) && !named.has(index)) named.set(index, message);
    }
  }
  return named;
}

function isRefusal(status: number | null, name: string): boolean {
  return REFUSALS.has(name) || (status === 422 && !ACCOUNT_422.has(name));
}

export function resendBatchResults(answer: ResendBatchAnswer, count: number, aborted: boolean, now: Date = new Date()): BatchResult {
  const { error } = answer;
  if (!error) {
    const ids = answer.data?.data;
    if (Array.isArray(ids) && ids.length === count && ids.every((d) => typeof d?.id === 'string' && d.id !== '')) {
      return { results: ids.map((d) => ({ kind: 'accepted', receipt: d!.id as string, providerStatus: 200 })) };
    }
    // Resend took the request but its answer does not say which email got
    // which id: the emails may all be queued, so nothing may be resent blind.
    const got = Array.isArray(ids) ? ids.length : 0;
    return all(count, {
      kind: 'failed',
      reason: `Resend accepted the batch but answered ${got} ids for ${count} emails`,
      outcomeUnknown: true,
      providerStatus: 200,
    });
  }

  const status = typeof error.statusCode === 'number' ? error.statusCode : null;
  const name = error.name ?? '';
  const input: ResendErrorInput = { status, name, message: error.message, headers: answer.headers, aborted };
  const detail = { ...(status !== null ? { providerStatus: status } : {}), ...(name ? { providerCode: name } : {}) };

  if (status === 409 && name === 'concurrent_idempotent_requests') {
    // The first request under this key is still in flight at Resend (a
    // worker whose lease was reclaimed while it waited). The key still
    // settles it: once that request ends, the same batch again gets its
    // answer. So the members stay bound and the batch goes again later,
    // rather than alone under other keys, which could deliver twice.
    return {
      results: Array.from({ length: count }, () => ({
        kind: 'failed' as const,
        reason: 'Resend concurrent_idempotent_requests: the first request with this batch key is still in progress; sent again later under the same key',
        outcomeUnknown: true,
        ...detail,
      })),
    };
  }

  if (status === 409 && name === 'invalid_idempotent_request') {
    // Another body under this key: an earlier request may have delivered
    // these emails, and this key can no longer tell.
    const why = 'used with another batch body';
    return {
      keyUnusable: true,
      ...all(count, {
        kind: 'failed',
        reason: `Resend ${name}: the batch's idempotency key is ${why}; an earlier request may have delivered`,
        outcomeUnknown: true,
        ...detail,
      }),
    };
  }

  if (status !== null && isRefusal(status, name)) {
    const named = namedMembers(error, count);
    if (named.size > 0) {
      const culprits = [...named.keys()].sort((a, b) => a - b).join(', ');
      return {
        results: Array.from({ length: count }, (_, i): BatchMemberResult => {
          const text = named.get(i);
          if (text !== undefined) return classifyResendError({ ...input, message: text }, now);
          return { kind: 'unsent', reason: `not sent: Resend refused the batch because of its email ${culprits} (strict validation)`, ...detail };
        }),
      };
    }
    const whole = classifyResendError(input, now);
    // A sender or account problem is every email's problem; a batch of one
    // is that email's own answer, exactly as a single send would get it.
    if (whole.kind === 'paused' || count === 1) return all(count, whole);
    const said = error.message ? `: ${redactAddresses(error.message)}` : '';
    return all(count, {
      kind: 'unsent',
      reason: `not sent: Resend refused the whole batch (strict validation) without naming the email at fault${said}`,
      ...detail,
    });
  }

  // Rate limit (the batch was not processed), quota, key, 5xx, network, timeout.
  return all(count, classifyResendError(input, now));
}

function all(count: number, result: BatchMemberResult): BatchResult {
  return { results: Array.from({ length: count }, () => ({ ...result })) };
}
