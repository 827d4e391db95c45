import type { FastifyInstance } from 'fastify';
import { access } from './auth.js';
import { z } from 'zod';
import { packageVersion } from '../runtime/version.js';
import { holdsListQuery } from './routes/holds.js';
import { extendHoldSchema, tenantSchema } from '../model/hold-input.js';
import { intentsListQuery, moveBody } from './routes/intents.js';
import { accountNameSchema } from './routes/accounts.js';
import { pauseBody, policyBody } from './routes/delivery.js';
import { erasureBody, pruneBody } from './routes/retention.js';
import { sendRateQuery } from './routes/send-rate.js';
import { historyQuery } from './routes/history.js';
import { suppressionAddBody, suppressionsListQuery } from './routes/suppressions.js';
import { tenantPauseBody, tenantPoliciesListQuery } from './routes/tenants.js';
import { auditListQuery } from './routes/audit.js';
import { tenantPolicySchema } from '../model/tenant-policy.js';
import { HoldShape, IntentShape, ErrorShape, RateLimitShape, DeliveryShape, AnyObject, AccountShape, TenantPolicyShape, TenantBacklogShape, TenantPauseShape, createHoldBody } from './openapi-shapes.js';

/**
 * The HTTP contract as an OpenAPI 3.1 document, served at
 * `GET /v1/openapi.json`. Request bodies and query parameters come from the
 * very zod schemas the routes parse with (z.toJSONSchema), so the document
 * cannot drift from what the API accepts; test/server/openapi.test.ts checks
 * that every registered /v1 route is in it and that it is valid OpenAPI.
 * Responses are described by the shapes in openapi-shapes.ts, kept deliberately open
 * (additional properties allowed: adding fields is not a breaking change).
 */

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  // `unrepresentable: 'any'`: a library-only alternative (a JS Date) becomes {}.
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

/** A zod object of query parameters as OpenAPI parameters. */
function queryParameters(schema: z.ZodObject): JsonSchema[] {
  const object = jsonSchema(schema) as { properties: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(object.properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: object.required?.includes(name) ?? false,
    schema: property,
  }));
}

const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { 'application/json': { schema: jsonSchema(schema, 'output') } },
});
const errorRef = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
const body = (schema: z.ZodType, required = true) => ({ required, content: { 'application/json': { schema: jsonSchema(schema) } } });
const pathParameter = (name: string, description: string) => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });

const holdId = pathParameter('id', 'the hold id');
const accountParameter = (name: string, description: string) => ({ ...pathParameter(name, description), schema: jsonSchema(accountNameSchema) });
const accountName = accountParameter('name', 'the account name (from LEASEHOLD_ACCOUNTS_FILE; `default` without one)');
const intentId = pathParameter('id', 'the intent id (reservation-expired:<holdId>)');
const tenantName = {
  ...pathParameter('tenant', "the tenant; the empty tenant is /v1/tenants/ (nothing after the slash)"),
  schema: jsonSchema(tenantSchema()),
};
const bad = { '400': errorRef('invalid input; error.field names the field') };
const notFound = { '404': errorRef('no such resource') };
const noAccount = { '404': errorRef('no such account') };
const notHeld = { '409': errorRef('hold_not_held: the hold already left held (error.status says where it went)') };

interface Operation {
  summary: string;
  parameters?: JsonSchema[];
  requestBody?: JsonSchema;
  responses: Record<string, JsonSchema>;
  security?: JsonSchema[];
  tags?: string[];
}

function v1Operations(): Record<string, Record<string, Operation>> {
  const webhook = (provider: string, proof: string, extra: Partial<Operation> = {}): Operation => ({
    summary: `${provider} delivery events (not behind the bearer token: ${proof})`,
    security: [],
    tags: ['webhooks'],
    ...extra,
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      '200': json(AnyObject, 'stored, duplicate or ignored events counted'),
      '400': errorRef('a proven but malformed body'),
      '401': errorRef('not proven: webhook_not_configured, missing_signature, invalid_signature, stale_message, invalid_credentials, topic_not_allowed'),
      ...extra.responses,
    },
  });
  return {
    '/v1/holds': {
      post: {
        summary: 'create a hold; the same id and body again answers 200 with the same hold, another body 409',
        tags: ['holds'],
        requestBody: body(createHoldBody),
        responses: {
          '201': json(HoldShape, 'created'),
          '200': json(HoldShape, 'an idempotent retry: the hold this request created before'),
          ...bad,
          '409': errorRef('idempotency_conflict: the id exists with a different request'),
        },
      },
      get: {
        summary: 'holds newest first, optionally of one status and one tenant, keyset-paged (pass nextCursor back as cursor)',
        tags: ['holds'],
        parameters: queryParameters(holdsListQuery),
        responses: { '200': json(z.object({ holds: z.array(HoldShape), nextCursor: z.string().nullable() }), 'a page of holds'), ...bad },
      },
    },
    '/v1/holds/{id}': {
      get: {
        summary: 'the hold and its notification timeline',
        tags: ['holds'],
        parameters: [holdId],
        responses: { '200': json(z.looseObject({ hold: HoldShape }), 'the hold, its intent, attempts and timeline'), ...bad, ...notFound },
      },
    },
    '/v1/holds/{id}/confirm': {
      post: {
        summary: 'held -> confirmed (its pending reminder is voided; a confirmation email when the hold asked for one)',
        tags: ['holds'],
        parameters: [holdId],
        responses: { '200': json(HoldShape, 'confirmed'), ...bad, ...notFound, ...notHeld },
      },
    },
    '/v1/holds/{id}/cancel': {
      post: {
        summary: 'held -> cancelled (no email is sent; its pending reminder is voided)',
        tags: ['holds'],
        parameters: [holdId],
        responses: { '200': json(HoldShape, 'cancelled'), ...bad, ...notFound, ...notHeld },
      },
    },
    '/v1/holds/{id}/extend': {
      post: {
        summary: 'move a held hold\'s deadline later ({ expiresAt } or { ttlSeconds } from now); the same deadline again is a no-op; its pending reminder moves with it',
        tags: ['holds'],
        parameters: [holdId],
        requestBody: body(extendHoldSchema()),
        responses: { '200': json(HoldShape, 'extended (or already at that deadline)'), ...bad, ...notFound, ...notHeld },
      },
    },
    '/v1/intents': {
      get: {
        summary: 'email intents newest first, optionally of one state and one tenant, keyset-paged',
        tags: ['intents'],
        parameters: queryParameters(intentsListQuery),
        responses: { '200': json(z.object({ intents: z.array(IntentShape), nextCursor: z.string().nullable() }), 'a page of intents'), ...bad },
      },
    },
    '/v1/intents/{id}': {
      get: {
        summary: 'an intent with its stored message summary and every attempt',
        tags: ['intents'],
        parameters: [intentId],
        responses: { '200': json(IntentShape, 'the intent'), ...bad, ...notFound },
      },
    },
    '/v1/intents/{id}/replay': {
      post: {
        summary: 'send again with a new idempotency key, without touching the hold',
        tags: ['intents'],
        parameters: [intentId],
        responses: { '200': json(IntentShape, 'pending again'), ...bad, ...notFound, '409': errorRef('intent_state: cannot be replayed') },
      },
    },
    '/v1/intents/{id}/move': {
      post: {
        summary: 'send a pending intent through another account in failover, even one pinned by an unknown outcome (its acceptance is then flagged possibleDuplicate)',
        tags: ['intents'],
        parameters: [intentId],
        requestBody: body(moveBody),
        responses: {
          '200': json(IntentShape, 'moved'),
          ...bad,
          ...notFound,
          '409': errorRef('intent_state: finished, or being sent now (its lease is live)'),
        },
      },
    },
    '/v1/delivery': {
      get: { summary: 'the fleet-wide delivery control (paused or not, why, until when)', tags: ['delivery'], responses: { '200': json(DeliveryShape, 'delivery control') } },
    },
    '/v1/delivery/pause': {
      post: {
        summary: 'pause delivery fleet-wide within a second; forSeconds lifts it by itself (the CLI\'s pause --for)',
        tags: ['delivery'],
        requestBody: body(pauseBody.unwrap().unwrap(), false),
        responses: { '200': json(DeliveryShape, 'paused'), ...bad },
      },
    },
    '/v1/delivery/resume': {
      post: { summary: 'resume delivery', tags: ['delivery'], responses: { '200': json(DeliveryShape, 'running'), ...bad } },
    },
    '/v1/rate-limit': {
      get: { summary: 'the shared limiter policy and its permits now', tags: ['delivery'], responses: { '200': json(RateLimitShape, 'the limiter') } },
      put: {
        summary: 'change the shared limiter; either field alone keeps the other (all workers obey within a second)',
        tags: ['delivery'],
        requestBody: body(policyBody),
        responses: { '200': json(RateLimitShape, 'the new policy'), ...bad },
      },
    },
    '/v1/accounts': {
      get: {
        summary: 'every provider account with its rate, permits, pause, cooldown, backlog and sends in the last minute, and the failover order',
        tags: ['accounts'],
        responses: { '200': json(z.looseObject({ failover: z.array(z.string()), accounts: z.array(AccountShape) }), 'the accounts') },
      },
    },
    '/v1/accounts/{name}': {
      get: { summary: 'one account', tags: ['accounts'], parameters: [accountName], responses: { '200': json(AccountShape, 'the account'), ...bad, ...noAccount } },
    },
    '/v1/accounts/{name}/rate-limit': {
      put: {
        summary: "change one account's limiter; either field alone keeps the other; other accounts keep theirs",
        tags: ['accounts'],
        parameters: [accountName],
        requestBody: body(policyBody),
        responses: { '200': json(RateLimitShape, 'the new policy'), ...bad, ...noAccount },
      },
    },
    '/v1/accounts/{name}/pause': {
      post: {
        summary: 'pause one account (its intents fail over to the next account; the fleet keeps running); forSeconds lifts it by itself',
        tags: ['accounts'],
        parameters: [accountName],
        requestBody: body(pauseBody.unwrap().unwrap(), false),
        responses: { '200': json(AccountShape, 'paused'), ...bad, ...noAccount },
      },
    },
    '/v1/accounts/{name}/resume': {
      post: {
        summary: "lift one account's pause",
        tags: ['accounts'],
        parameters: [accountName],
        responses: { '200': json(AccountShape, 'running'), ...bad, ...noAccount },
      },
    },
    '/v1/status': {
      get: { summary: 'both lanes at a glance (what `leasehold status --json` prints)', tags: ['operations'], responses: { '200': json(AnyObject, 'status') } },
    },
    '/v1/status/sends': {
      get: {
        summary: 'send attempts per second by outcome over the last `seconds`, counted at each attempt\'s start (where the limiter counts)',
        tags: ['operations'],
        parameters: queryParameters(sendRateQuery),
        responses: { '200': json(AnyObject, '{ now, bins: [{ t, outcomes }] }'), ...bad },
      },
    },
    '/v1/status/history': {
      get: {
        summary: 'both lanes over the last `seconds` (at most 3600): backlog, due holds and oldest ages, one sample per 10 s as the service took them',
        tags: ['operations'],
        parameters: queryParameters(historyQuery),
        responses: { '200': json(AnyObject, '{ now, intervalSeconds, samples: [{ t, backlog, dueHolds, oldestPendingAgeSeconds, oldestDueAgeSeconds }] }'), ...bad },
      },
    },
    '/v1/retention': {
      get: { summary: 'the retention policy and the oldest rows it is waiting for', tags: ['retention'], responses: { '200': json(AnyObject, 'retention') } },
    },
    '/v1/retention/prune': {
      post: {
        summary: 'run retention now (at most 10 s), or preview it with dryRun',
        tags: ['retention'],
        requestBody: body(pruneBody.unwrap().unwrap(), false),
        responses: { '200': json(AnyObject, 'what was (or would be) deleted and erased'), ...bad, '409': errorRef('locked: rows are busy, try again') },
      },
    },
    '/v1/erasures': {
      post: {
        summary: "erase one address's personal data everywhere retention reaches (`{email}`), or every story of one tenant (`{tenant}`)",
        tags: ['retention'],
        requestBody: body(erasureBody),
        responses: { '200': json(AnyObject, 'what was erased, per table'), ...bad, '409': errorRef('locked: rows are busy, try again') },
      },
    },
    '/v1/suppressions': {
      get: {
        summary: 'suppressed addresses newest first, keyset-paged',
        tags: ['suppressions'],
        parameters: queryParameters(suppressionsListQuery),
        responses: { '200': json(z.looseObject({ suppressions: z.array(AnyObject), nextCursor: z.string().nullable() }), 'a page'), ...bad },
      },
      post: {
        summary: 'suppress an address (manual); an address already suppressed answers 200 with its entry',
        tags: ['suppressions'],
        requestBody: body(suppressionAddBody),
        responses: { '201': json(AnyObject, 'suppressed'), '200': json(AnyObject, 'already suppressed'), ...bad },
      },
    },
    '/v1/suppressions/{address}': {
      delete: {
        summary: 'lift a suppression, named by the address or its sha256 hash',
        tags: ['suppressions'],
        parameters: [pathParameter('address', 'the address, or sha256 hex of it trimmed and lower-cased')],
        responses: { '200': json(z.object({ removed: AnyObject }), 'lifted'), ...bad, ...notFound },
      },
    },
    '/v1/tenants': {
      get: {
        summary:
          'every tenant policy, by tenant (the empty tenant first), keyset-paged (pass nextCursor back as cursor); and the `top` tenants with email waiting, largest backlog first',
        tags: ['tenants'],
        parameters: queryParameters(tenantPoliciesListQuery),
        responses: {
          '200': json(
            z.object({ policies: z.array(TenantPolicyShape), nextCursor: z.string().nullable(), backlog: z.array(TenantBacklogShape) }),
            'a page of policies, and the largest backlogs',
          ),
          ...bad,
        },
      },
    },
    '/v1/tenants/{tenant}': {
      get: {
        summary: "a tenant's policy: its weight, cap, account and sender, as the delivery lane applies them",
        tags: ['tenants'],
        parameters: [tenantName],
        responses: { '200': json(TenantPolicyShape, 'the policy'), ...bad, '404': errorRef('the tenant has no policy') },
      },
      put: {
        summary: "set a tenant's policy as a whole (fields left out are not set; {} is no cap, weight 1); burst needs perSecond and defaults to it rounded up",
        tags: ['tenants'],
        parameters: [tenantName],
        requestBody: body(tenantPolicySchema(), false),
        responses: { '201': json(TenantPolicyShape, 'created'), '200': json(TenantPolicyShape, 'replaced'), ...bad },
      },
      delete: {
        summary: "remove a tenant's policy (it then shares its account with no cap)",
        tags: ['tenants'],
        parameters: [tenantName],
        responses: { '204': { description: 'removed' }, ...bad, '404': errorRef('the tenant has no policy') },
      },
    },
    '/v1/tenants/{tenant}/pause': {
      post: {
        summary: "pause one tenant: its intents stay pending and no round leases them until it is resumed; the others go on",
        tags: ['tenants'],
        parameters: [tenantName],
        requestBody: body(tenantPauseBody, false),
        responses: { '200': json(TenantPauseShape, 'paused (a pause in force keeps its first reason)'), ...bad },
      },
    },
    '/v1/tenants/{tenant}/resume': {
      post: {
        summary: 'resume one tenant',
        tags: ['tenants'],
        parameters: [tenantName],
        responses: { '200': json(TenantPauseShape, 'resumed'), ...bad, '404': errorRef('the tenant was not paused') },
      },
    },
    '/v1/webhooks/resend': { post: webhook('Resend', 'a Svix signature with RESEND_WEBHOOK_SECRET') },
    '/v1/webhooks/postmark': { post: webhook('Postmark', 'basic-auth credentials POSTMARK_WEBHOOK_USER/PASSWORD') },
    '/v1/webhooks/ses': { post: webhook('Amazon SES via SNS', 'an SNS signature from a topic in SES_WEBHOOK_TOPIC_ARN') },
    '/v1/webhooks/{account}': {
      post: webhook("An account's provider", "that provider's proof, with the webhook fields of the account in LEASEHOLD_ACCOUNTS_FILE", {
        parameters: [accountParameter('account', 'an account of LEASEHOLD_ACCOUNTS_FILE')],
        responses: { '404': errorRef('no account of that name takes webhooks here') },
      }),
    },
    '/v1/openapi.json': {
      get: { summary: 'this document', tags: ['operations'], responses: { '200': json(AnyObject, 'OpenAPI 3.1') } },
    },
    '/v1/audit': {
      get: {
        summary: 'the audit log, newest first: who changed what (pause, rate limits, replay, suppressions, erasure, retention runs, tenant policy, refused tokens), with the values before and after',
        tags: ['operations'],
        parameters: queryParameters(auditListQuery),
        responses: { '200': json(AnyObject, '{ entries, nextCursor }'), ...bad },
      },
    },
    '/v1/token': {
      get: {
        summary: "the calling token's name, role (read, operate, admin) and tenants (null: every tenant)",
        tags: ['operations'],
        responses: { '200': json(AnyObject, '{ name, role, tenants }') },
      },
    },
  };
}

let cached: JsonSchema | undefined;

/** The OpenAPI 3.1 document for the HTTP API (built once). */
export function openApiDocument(): JsonSchema {
  if (cached) return cached;
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const [path, operations] of Object.entries(v1Operations())) {
    paths[path] = {};
    for (const [method, operation] of Object.entries(operations)) {
      const responses = { ...operation.responses };
      // Every bearer-authenticated route can answer 401; every route with a body 413/415.
      if (!operation.security) {
        responses['401'] = errorRef('missing, wrong or expired bearer token');
        responses['403'] ??= errorRef("the token's role is not enough (the message names the role needed), or it is limited to tenants on a fleet-wide route");
        responses['429'] ??= errorRef('too many refused tokens from this client address in a minute; see Retry-After');
      }
      if (operation.requestBody) {
        responses['413'] ??= errorRef('body larger than the limit');
        responses['415'] ??= errorRef('not application/json');
      }
      paths[path]![method] = { operationId: operationId(method, path), ...operation, responses };
    }
  }
  paths['/healthz'] = {
    get: {
      operationId: 'getHealthz',
      summary: 'health: 200 ok, 503 with reasons (database down, an oldest age past its promise, delivery paused)',
      security: [],
      tags: ['operations'],
      responses: { '200': json(AnyObject, 'healthy'), '503': json(AnyObject, 'unhealthy, with reasons') },
    },
  };
  paths['/metrics'] = {
    get: {
      operationId: 'getMetrics',
      summary: 'Prometheus text format',
      security: [],
      tags: ['operations'],
      responses: { '200': { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
  };
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'leasehold',
      version: packageVersion(),
      description: 'Durable hold expiry and rate-limited email notification. Errors are {"error":{"code","message"}}.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_API_TOKEN' } },
      schemas: { Error: jsonSchema(ErrorShape, 'output') },
    },
    paths,
  };
  return cached;
}

function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\/v1\//, '')
    .split(/[/.-]/)
    .filter(Boolean)
    .map((part) => (part.startsWith('{') ? `by ${part.slice(1, -1)}` : part))
    .join(' ')
    .split(' ');
  return method + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}

/** `GET /v1/openapi.json` (behind the bearer token like the rest of /v1). */
export function openApiRoutes(app: FastifyInstance): void {
  app.get('/openapi.json', access('read', 'any'), async () => openApiDocument());
}
