import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiHarness, TOKEN, type ApiHarness } from './harness.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_auth');
});
afterAll(() => h.close());

const V1_ROUTES: Array<[string, string]> = [
  ['POST', '/v1/holds'],
  ['GET', '/v1/holds/x'],
  ['POST', '/v1/holds/x/confirm'],
  ['POST', '/v1/holds/x/cancel'],
  ['GET', '/v1/intents'],
  ['GET', '/v1/intents/x'],
  ['POST', '/v1/intents/x/replay'],
  ['POST', '/v1/delivery/pause'],
  ['POST', '/v1/delivery/resume'],
  ['GET', '/v1/rate-limit'],
  ['PUT', '/v1/rate-limit'],
  ['GET', '/v1/delivery'],
  ['GET', '/v1/status'],
];

describe('bearer token on /v1', () => {
  it.each(V1_ROUTES)('%s %s: 401 without a token, with a wrong one, with another scheme', async (method, url) => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, 'Bearer', TOKEN]) {
      const res = await h.app.inject({ method: method as 'GET', url, headers: authorization ? { authorization } : {} });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
  });

  it.each([
    ['GET', '/v1/nope'],
    ['GET', '/v1'],
    ['POST', '/v1/'],
    ['DELETE', '/v1/holds/x'],
    ['GET', '/v1/holds/x/confirm'],
    ['PUT', '/v1/intents'],
    ['GET', '/v1/admin?x=1'],
  ])('%s %s (no such route): 401 without the token, so probing cannot tell which routes exist; 404 with it', async (method, url) => {
    for (const authorization of [undefined, 'Bearer wrong-token']) {
      const res = await h.app.inject({ method: method as 'GET', url, headers: authorization ? { authorization } : {} });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
    const authed = await h.call(method as 'GET', url);
    expect(authed.statusCode).toBe(404);
    expect(authed.json().error.code).toBe('not_found');
  });

  it('outside /v1 an unknown route is a 404 with or without a token', async () => {
    for (const url of ['/v2/holds', '/v1x', '/nope']) {
      expect((await h.app.inject({ method: 'GET', url })).statusCode, url).toBe(404);
    }
  });

  it('the right token passes (case-insensitive scheme), and nothing was changed by refused calls', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/v1/intents', headers: { authorization: `bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect((await h.call('GET', '/v1/delivery')).json().paused).toBe(false);
  });

  it('/healthz and /metrics are open', async () => {
    expect((await h.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
  });
});

describe('error shapes for bad input', () => {
  it('malformed JSON -> 400 invalid_json', async () => {
    for (const body of ['{', '{"customerEmail": }', '[1,', '{"a":1}}', 'undefined']) {
      const res = await h.call('POST', '/v1/holds', body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().error.code).toBe('invalid_json');
    }
  });

  it('prototype poisoning in JSON -> 400', async () => {
    const res = await h.call('POST', '/v1/holds', '{"__proto__":{"admin":true},"customerEmail":"a@example.com","ttlSeconds":60}');
    expect(res.statusCode).toBe(400);
  });

  it('a 1 MB body -> 413 payload_too_large, and the server keeps answering', async () => {
    const huge = JSON.stringify({ customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { blob: 'x'.repeat(1024 * 1024) } });
    const res = await h.call('POST', '/v1/holds', huge);
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('payload_too_large');
    expect((await h.call('GET', '/v1/intents')).statusCode).toBe(200);
  });

  it('metadata over 16 KiB (under the body limit) -> 400 naming metadata', async () => {
    const res = await h.call('POST', '/v1/holds', { customerEmail: 'a@example.com', ttlSeconds: 60, metadata: { blob: 'x'.repeat(20_000) } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.field).toBe('metadata');
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/octet-stream'])(
    'content type %s -> 415',
    async (type) => {
      const res = await h.call('POST', '/v1/holds', '{"customerEmail":"a@example.com","ttlSeconds":60}', { 'content-type': type });
      expect(res.statusCode).toBe(415);
      expect(res.json().error.code).toBe('unsupported_media_type');
    },
  );

  it('application/json with a charset parameter is fine', async () => {
    const res = await h.call('POST', '/v1/holds', '{"customerEmail":"a@example.com","ttlSeconds":60}', {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.statusCode).toBe(201);
  });

  it('bad percent-encoding in a path -> 400; unknown routes -> 404 in the same shape', async () => {
    const bad = await h.call('GET', '/v1/holds/%E0%A4%A');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('bad_url');
    for (const [method, url] of [
      ['GET', '/v2/holds'],
      ['DELETE', '/v1/holds/x'],
      ['GET', '/v1/holds/x/confirm'],
    ]) {
      const res = await h.call(method as 'GET', url!);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json()).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    }
  });
});
