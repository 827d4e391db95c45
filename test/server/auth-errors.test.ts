import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.js';
import { startApiServer } from '../../src/server/app.js';
import { loadConfig } from '../../src/config.js';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';

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
    ['GET', '/v1/nope', 404, undefined],
    ['GET', '/v1', 404, undefined],
    ['POST', '/v1/', 404, undefined],
    ['DELETE', '/v1/holds/x', 405, 'GET, HEAD'],
    ['GET', '/v1/holds/x/confirm', 405, 'POST'],
    ['PUT', '/v1/intents', 405, 'GET, HEAD'],
    ['POST', '/v1/rate-limit', 405, 'GET, HEAD, PUT'],
    ['GET', '/v1/admin?x=1', 404, undefined],
  ])('%s %s (no such route): 401 without the token, so probing cannot tell which routes exist; %i with it', async (method, url, status, allow) => {
    for (const authorization of [undefined, 'Bearer wrong-token']) {
      const res = await h.app.inject({ method: method as 'GET', url, headers: authorization ? { authorization } : {} });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.headers.allow).toBeUndefined();
      expect(res.json()).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
    }
    const authed = await h.call(method as 'GET', url);
    expect(authed.statusCode).toBe(status);
    expect(authed.headers.allow).toBe(allow);
    expect(authed.json().error.code).toBe(status === 405 ? 'method_not_allowed' : 'not_found');
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
      expect(res.json().error).toEqual({
        code: 'unsupported_media_type',
        message: `content-type ${type.split(';')[0]} is not supported; send application/json`,
      });
    },
  );

  it('application/json with a charset parameter is fine', async () => {
    const res = await h.call('POST', '/v1/holds', '{"customerEmail":"a@example.com","ttlSeconds":60}', {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.statusCode).toBe(201);
  });

  it('bad percent-encoding in a path -> 400; unknown routes -> 404 and known paths with another method -> 405, in the same shape', async () => {
    const bad = await h.call('GET', '/v1/holds/%E0%A4%A');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('bad_url');
    for (const [method, url] of [
      ['GET', '/v2/holds'],
      ['GET', '/v1/holds/x/y'],
    ]) {
      const res = await h.call(method as 'GET', url!);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json()).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    }
    for (const [method, url, allow] of [
      ['DELETE', '/v1/holds/x', 'GET, HEAD'],
      ['GET', '/v1/holds/x/confirm', 'POST'],
      ['DELETE', '/v1/erasures', 'POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ]) {
      const res = await h.call(method as 'GET', url!);
      expect(res.statusCode, `${method} ${url}`).toBe(405);
      expect(res.headers.allow, `${method} ${url}`).toBe(allow);
      expect(res.json()).toEqual({ error: { code: 'method_not_allowed', message: `${url} does not take ${method}; it takes ${allow}` } });
    }
  });
});

describe('requests refused by the HTTP parser, before any route (a real socket)', () => {
  // Raw bytes in, raw response out: these never reach Fastify's request
  // handling, so only a listening server shows what a client would get.
  function exchange(port: number, request: string): Promise<{ status: number; headers: string; body: string }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString('utf8')));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head = '', body = ''] = data.split('\r\n\r\n');
        resolve({ status: Number(head.split(' ')[1]), headers: head, body });
      });
      socket.write(request);
    });
  }

  it.each([
    ['a header block over the limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`, 431, 'header_too_large'],
    ['a malformed request line', 'NOT HTTP AT ALL\r\n\r\n', 400, 'bad_request'],
  ])('%s gets the JSON error shape, and the server keeps serving', async (_what, request, status, code) => {
    const server = await startApiServer({
      pool: h.db.pool,
      schema: h.db.schema,
      config: loadConfig({}),
      logger: h.logger,
      metrics: createMetrics(),
      apiToken: TOKEN,
      port: 0,
    });
    try {
      const port = Number(new URL(server.url).port);
      const res = await exchange(port, request);
      expect(res.status, res.headers).toBe(status);
      expect(res.headers).toMatch(/^content-type: application\/json/im);
      expect(JSON.parse(res.body)).toEqual({ error: { code, message: expect.any(String) } });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
