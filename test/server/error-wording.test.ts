import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLES } from '../helpers/access.js';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await apiHarness('api_error_wording');
});
afterAll(() => h.close());

/** zod's own English, which must never reach a caller. */
const RAW_ZOD = /Invalid input|Invalid option|expected .* received|received undefined|Too (big|small)|Unrecognized key|Invalid (string|key|value|element)/;

const send = (method: 'POST' | 'PUT', url: string, payload?: string) =>
  h.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${TOKEN}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(payload !== undefined ? { payload } : {}),
  });

describe('a mistake in a body is answered in our words', () => {
  it('an unknown field is named first, with the field it resembles; a missing one is required', async () => {
    const both = await h.call('POST', '/v1/holds', { customer_email: 'a@example.com', ttl_seconds: 60 });
    expect(both.statusCode).toBe(400);
    expect(both.json().error).toEqual({ code: 'validation_error', field: 'customer_email', message: 'customer_email: unknown field; did you mean customerEmail?' });

    const typo = await h.call('POST', '/v1/holds', { customerEmail: 'a@example.com', ttlSecond: 60 });
    expect(typo.json().error).toMatchObject({ field: 'ttlSecond', message: 'ttlSecond: unknown field; did you mean ttlSeconds?' });

    const missing = await h.call('POST', '/v1/holds', { ttlSeconds: 60 });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toEqual({ code: 'validation_error', field: 'customerEmail', message: 'customerEmail: required' });

    const nothing = await h.call('POST', '/v1/holds', { customerEmail: 'a@example.com', ttlSeconds: 60, colour: 'red' });
    expect(nothing.json().error).toMatchObject({ field: 'colour', message: 'colour: unknown field' });
  });

  it("zod's defaults are reworded: an array where an object goes, a fraction where an integer goes", async () => {
    const metadata = await h.call('POST', '/v1/holds', { customerEmail: 'a@example.com', ttlSeconds: 60, metadata: [1] });
    expect(metadata.json().error).toMatchObject({ field: 'metadata', message: 'metadata: must be an object' });
    const body = await h.call('POST', '/v1/holds', [1]);
    expect(body.json().error).toMatchObject({ field: 'body', message: 'body: must be an object' });
  });

  // Every route that reads a body, sent the shapes people get wrong.
  const routes = Object.entries(SAMPLES).filter(([route]) => /^(POST|PUT) /.test(route));
  it.each(routes)('%s: no bad body gets zod English or a 5xx', async (route, sample) => {
    const method = route.split(' ')[0] as 'POST' | 'PUT';
    const fields = sample.body && typeof sample.body === 'object' ? Object.keys(sample.body) : [];
    const payloads: Array<string | undefined> = [undefined, '', 'null', '[]', '5', '"x"', 'true', '{"zzz":1}', '[{"a":1}]'];
    for (const field of fields) {
      for (const wrong of [[], {}, 5, 'x', null, true, 1.5, -1, 'x'.repeat(2000)]) {
        payloads.push(JSON.stringify({ ...(sample.body as object), [field]: wrong }));
      }
      const { [field]: _left, ...rest } = sample.body as Record<string, unknown>;
      payloads.push(JSON.stringify(rest));
      payloads.push(JSON.stringify({ ...rest, [field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]: (sample.body as Record<string, unknown>)[field], [`${field}X`]: 1 }));
    }
    let refused = 0;
    for (const payload of payloads) {
      const res = await send(method, sample.url, payload);
      const what = `${route} ${payload?.slice(0, 80)} -> ${res.statusCode} ${res.body.slice(0, 200)}`;
      expect(res.statusCode, what).toBeLessThan(500);
      if (res.statusCode < 400) continue;
      refused++;
      const { error } = res.json() as { error: { message: string } };
      expect(error.message, what).not.toMatch(RAW_ZOD);
    }
    // The test is only worth something if bad bodies were refused.
    expect(refused).toBeGreaterThan(fields.length);
  });
});

describe('one name for an address: address', () => {
  it.each([
    ['/v1/erasures', 'email'],
    ['/v1/erasures', 'customerEmail'],
    ['/v1/erasures', 'customer_email'],
    ['/v1/suppressions', 'email'],
    ['/v1/suppressions', 'customerEmail'],
  ])('POST %s {%s} is a 400 naming address', async (url, name) => {
    const res = await h.call('POST', url, { [name]: 'someone@example.com' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ code: 'validation_error', field: name, message: `${name}: unknown field; did you mean address?` });
  });

  it('POST /v1/erasures and /v1/suppressions both take address', async () => {
    expect((await h.call('POST', '/v1/erasures', { address: 'someone@example.com' })).statusCode).toBe(200);
    expect((await h.call('POST', '/v1/suppressions', { address: 'someone@example.com' })).statusCode).toBe(201);
    const missing = await h.call('POST', '/v1/suppressions', {});
    expect(missing.json().error).toEqual({ code: 'validation_error', field: 'address', message: 'address: required' });
    const bad = await h.call('POST', '/v1/erasures', { address: 'not an address' });
    expect(bad.json().error).toMatchObject({ field: 'address', message: 'address: must be an email address' });
  });
});
