import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';

/**
 * The pieces every route's schema is built from. Each route declares its
 * request and response schemas on itself (`schema: { params, querystring,
 * body, response }`); Fastify validates requests and serializes responses
 * through them (server/validation.ts), and @fastify/swagger turns them into
 * `GET /v1/openapi.json` (server/openapi.ts), so the document is the code.
 *
 * Response objects are closed: a field a shape does not declare is not
 * answered, and the document says `additionalProperties: false`. Shapes of
 * the model's own types are checked against them at compile time
 * (`SameKeys`), so a field added to a Hold cannot be silently dropped.
 */

/** The /v1 plugin with the zod type provider: handlers' inputs and answers are typed from the route's schemas. */
export type ZodApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

/**
 * Every timestamp of the API, in and out: an RFC 3339 date-time with a zone
 * offset. Handlers answer a Date (serialized in UTC, `Z`); a request's
 * string is decoded to a Date. One component, `Timestamp` (answers) and
 * `TimestampInput` (requests), instead of a pattern repeated per field.
 */
export const Timestamp = z
  .codec(z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' }), z.date(), {
    decode: (text) => new Date(text),
    encode: (date) => date.toISOString(),
  })
  .meta({ id: 'Timestamp', description: 'an RFC 3339 date-time with a zone offset, e.g. 2026-05-04T10:00:00Z' });

export const NullableTimestamp = Timestamp.nullable();

/** The one error shape of every refusal (server/errors.ts toErrorResponse). */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().describe('stable, machine-readable: validation_error, not_found, hold_not_held, ...'),
      message: z.string().describe('for people: what is wrong and, where it helps, what to send instead'),
      field: z.string().optional().describe('the field a 400 is about (`body` for the body as a whole)'),
      status: z.string().optional().describe("hold_not_held: the hold's current status"),
      state: z.string().optional().describe("intent_state: the intent's current state"),
    }),
  })
  .meta({ id: 'Error', description: 'every answer that is not a success' });

export type ErrorBodyShape = z.output<typeof ErrorBody>;

/** The values of one of the model's constant objects (HoldStatus, IntentState, ...), for `z.enum`. */
export const valuesOf = <T extends Record<string, string>>(constants: T) => Object.values(constants) as [T[keyof T], ...Array<T[keyof T]>];

/** A JSON answer with its description, as OpenAPI lists it. */
export function json<S extends z.ZodType>(schema: S, description: string) {
  return { description, content: { 'application/json': { schema } } };
}

/** An answer with no body (204). */
export const noContent = (description: string) => ({ description, content: { 'application/json': { schema: z.undefined() } } });

/** The refusals a route can give, each with what it means there. */
export type Refusal = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503;
type Refusals = Partial<Record<Refusal, string>>;

const error = (description: string) => json(ErrorBody, description);
type ErrorAnswers = Partial<Record<Refusal, ReturnType<typeof error>>>;

export const BAD_INPUT = 'invalid input: error.field names the field and error.message says why';

/**
 * The answers of a route behind the bearer token: its own (`ok` and
 * `refusals`), and what every such route can answer: 401 (no or a wrong
 * token), 403 (role or tenant), 429 (too many refused tokens), 503 (the
 * database away, or the server shutting down); with a body also 413 and 415.
 */
export function answers<const Ok extends Record<number, unknown>>(ok: Ok, refusals: Refusals = {}, { body = false } = {}): Ok & ErrorAnswers {
  return {
    ...ok,
    ...errorAnswers({
      401: 'missing, wrong or expired bearer token (WWW-Authenticate: Bearer)',
      403: "the token's role is not enough (the message names the role needed), or it is limited to tenants and this is not one of theirs",
      429: "too many refused tokens from this client's address in a minute; see Retry-After",
      ...(body ? { 413: 'the body is larger than the limit (64 KiB)', 415: 'the body is not application/json' } : {}),
      ...SHARED,
      ...refusals,
    }),
  };
}

/** The answers of a route open to anyone (health, webhooks): its own, and 503. */
export function openAnswers<const Ok extends Record<number, unknown>>(ok: Ok, refusals: Refusals = {}): Ok & ErrorAnswers {
  return { ...ok, ...errorAnswers({ ...SHARED, ...refusals }) };
}

const SHARED: Refusals = { 503: 'the database is unreachable, or this server is shutting down: try again (code database_unavailable or shutting_down)' };

function errorAnswers(refusals: Refusals): ErrorAnswers {
  const out: ErrorAnswers = {};
  for (const [status, description] of Object.entries(refusals) as Array<[`${Refusal}`, string]>) out[Number(status) as Refusal] = error(description);
  return out;
}

/** A keyset page: its items under `key`, and the cursor of the next page (null: the last one). */
export function page<const K extends string, S extends z.ZodType>(key: K, item: S) {
  return z.object({ [key]: z.array(item), nextCursor: z.string().nullable().describe('pass back as `cursor` for the next page; null: this is the last') } as {
    [P in K]: z.ZodArray<S>;
  } & { nextCursor: z.ZodNullable<z.ZodString> });
}

/**
 * Compile-time: a shape declares exactly the fields of the model type it
 * answers with, so none is stripped from answers and none is invented.
 * Use as `const _check: SameKeys<z.output<typeof HoldShape>, Hold> = true`.
 */
export type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : { extra: Exclude<keyof A, keyof B>; missing: Exclude<keyof B, keyof A> };
