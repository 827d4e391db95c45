import Fastify, { type LightMyRequestResponse } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../src/observability/logger.js';
import { errorHandler } from '../../src/server/errors.js';
import { answers, json, Timestamp } from '../../src/server/shapes/common.js';
import { serializerCompiler, validatorCompiler } from '../../src/server/validation.js';
import { ContractValidator } from '../helpers/contract.js';
import { apiHarness, LogCapture, type ApiHarness } from '../helpers/server.js';

/**
 * The API keeps the contract it publishes. Every call of the API tests is
 * checked against the served document (helpers/server.ts checkContract);
 * these tests show that check fails on each kind of drift, and that an
 * answer its route's schema does not describe never leaves the server.
 */

let h: ApiHarness;
let contract: ContractValidator;
beforeAll(async () => {
  h = await apiHarness('api_contract');
  contract = new ContractValidator((await h.call('GET', '/v1/openapi.json')).json());
});
afterAll(() => h.close());

/** A response as `app.inject` gives it, with another status or body. */
function answer(statusCode: number, body: unknown, contentType = 'application/json; charset=utf-8'): LightMyRequestResponse {
  return { statusCode, body: JSON.stringify(body), headers: { 'content-type': contentType } } as unknown as LightMyRequestResponse;
}

describe('the contract check', () => {
  it('passes what the API really answers', async () => {
    const created = await h.call('POST', '/v1/holds', { id: 'c-1', customerEmail: 'c@example.com', ttlSeconds: 600 });
    expect(created.statusCode).toBe(201);
    expect(contract.check({ method: 'POST', url: '/v1/holds', body: { id: 'c-1', customerEmail: 'c@example.com', ttlSeconds: 600 } }, created)).toEqual([]);
    const timeline = await h.call('GET', '/v1/holds/c-1');
    expect(contract.check({ method: 'GET', url: '/v1/holds/c-1' }, timeline)).toEqual([]);
  });

  it('fails an answer with a field the document does not declare, or one of the wrong type', async () => {
    const hold = (await h.call('GET', '/v1/holds/c-1')).json() as { hold: Record<string, unknown> };
    const extra = contract.check({ method: 'GET', url: '/v1/holds/c-1' }, answer(200, { ...hold, secret: 1 }));
    expect(extra.join('\n')).toMatch(/GET \/v1\/holds\/c-1 200 answer does not fit the document: .*additional properties/);
    const wrongType = contract.check({ method: 'GET', url: '/v1/holds/c-1' }, answer(200, { ...hold, hold: { ...hold.hold, expiresAt: 'tomorrow' } }));
    expect(wrongType.join('\n')).toMatch(/hold\/expiresAt must match format "date-time"/);
  });

  it("fails an intent whose attempts are a count, the old document's drift", async () => {
    const intent = {
      id: 'reservation-expired:c-1', holdId: 'c-1', tenant: '', template: 'reservation-expired', state: 'pending', sendBy: null,
      attempts: 0, failedAttempts: 0, availableAt: new Date().toISOString(), createdAt: new Date().toISOString(), sentAt: null, finishedAt: null,
      receipt: null, lastError: null, leased: false, leaseExpiresAt: null, leaseExpirations: 0, replays: 0, possibleDuplicate: false,
      account: null, pinnedAccount: null, sentAccount: null, message: null,
    };
    const problems = contract.check({ method: 'GET', url: '/v1/intents/reservation-expired:c-1' }, answer(200, intent));
    expect(problems.join('\n')).toMatch(/attempts must be array/);
    expect(contract.check({ method: 'GET', url: '/v1/intents/reservation-expired:c-1' }, answer(200, { ...intent, attempts: [] }))).toEqual([]);
  });

  it('fails a status the operation does not list, and a refusal not in the error shape', () => {
    expect(contract.check({ method: 'GET', url: '/v1/holds/c-1' }, answer(418, { error: { code: 'teapot', message: 'no' } }))).toEqual([
      expect.stringContaining('GET /v1/holds/c-1 answered 418, which /v1/holds/{id} get does not list'),
    ]);
    expect(contract.check({ method: 'GET', url: '/v1/holds/c-1' }, answer(404, { error: 'Not Found' })).join('\n')).toMatch(/404 answer does not fit/);
    expect(contract.check({ method: 'GET', url: '/v1/nowhere' }, answer(404, { message: 'Not Found' })).join('\n')).toMatch(/must have required property 'error'/);
  });

  it('fails a request the API accepted that the document would refuse', () => {
    const ok = answer(200, { holds: [], nextCursor: null });
    expect(contract.check({ method: 'GET', url: '/v1/holds?limit=many' }, ok).join('\n')).toMatch(/query parameter limit does not fit/);
    const created = answer(201, {});
    expect(contract.check({ method: 'POST', url: '/v1/holds', body: { customerEmail: 'c@example.com', ttlSeconds: 60, colour: 'red' } }, created).join('\n')).toMatch(
      /request body does not fit the document/,
    );
  });
});

describe('answers through the route schemas', () => {
  it('an answer that does not fit its schema never leaves: a 500, the field and the reason logged, never the value', async () => {
    const logs = new LogCapture();
    const app = Fastify().withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    app.setErrorHandler(errorHandler(createLogger({ level: 'error', destination: logs })));
    const shape = z.object({ at: Timestamp, count: z.number().int() });
    app.get('/wrong', { schema: { response: answers({ 200: json(shape, 'x') }) } }, async () => ({ at: new Date(), count: 'secret@example.com' }) as never);
    app.get('/right', { schema: { response: answers({ 200: json(shape, 'x') }) } }, async () => ({ at: new Date('2026-01-02T03:04:05Z'), count: 2 }));
    const wrong = await app.inject('/wrong');
    expect(wrong.statusCode).toBe(500);
    expect(wrong.json()).toEqual({ error: { code: 'internal', message: 'internal error' } });
    expect(logs.text).toContain('count: Invalid input: expected number');
    expect(logs.text).not.toContain('secret@example.com');
    expect((await app.inject('/right')).json()).toEqual({ at: '2026-01-02T03:04:05.000Z', count: 2 });
    await app.close();
  });
});
