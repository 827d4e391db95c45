import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { webhookEndpointsFromConfig } from '../../src/webhooks/endpoints.js';
import { runCliInProcess } from '../helpers/cli.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-webhooks-'));
const file = (name: string, text: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};
const endpoints = (env: Record<string, string>) => webhookEndpointsFromConfig(loadConfig(env));
const refusal = (env: Record<string, string>) => {
  try {
    endpoints(env);
  } catch (error) {
    return (error as Error).message;
  }
  return 'accepted';
};

describe('webhook configuration', () => {
  it('LEASEHOLD_WEBHOOK_URL and _SECRET make the endpoint `default`: every type, every tenant', () => {
    expect(endpoints({ LEASEHOLD_WEBHOOK_URL: 'https://app.example.com/hooks', LEASEHOLD_WEBHOOK_SECRET: SECRET })).toEqual([
      { name: 'default', url: 'https://app.example.com/hooks', secret: SECRET, rate: { perSecond: 20, burst: 20 }, concurrency: 4 },
    ]);
    expect(endpoints({})).toEqual([]);
  });

  it('refuses a URL that is not http(s), naming the variable', () => {
    expect(refusal({ LEASEHOLD_WEBHOOK_URL: 'ftp://app.example.com/hooks', LEASEHOLD_WEBHOOK_SECRET: SECRET })).toMatch(/^LEASEHOLD_WEBHOOK_URL: must be an absolute http/);
    expect(refusal({ LEASEHOLD_WEBHOOK_URL: 'not a url', LEASEHOLD_WEBHOOK_SECRET: SECRET })).toMatch(/^LEASEHOLD_WEBHOOK_URL: /);
    expect(refusal({ LEASEHOLD_WEBHOOK_URL: 'https://user:pw@app.example.com/', LEASEHOLD_WEBHOOK_SECRET: SECRET })).toMatch(/^LEASEHOLD_WEBHOOK_URL: /);
  });

  it('refuses a secret that is not whsec_ and base64 of 24 to 64 bytes, without echoing it', () => {
    for (const secret of ['hunter2-hunter2-hunter2', 'whsec_not*base64', `whsec_${Buffer.alloc(8).toString('base64')}`, `whsec_${Buffer.alloc(100).toString('base64')}`]) {
      const message = refusal({ LEASEHOLD_WEBHOOK_URL: 'https://app.example.com/', LEASEHOLD_WEBHOOK_SECRET: secret });
      expect(message).toMatch(/^LEASEHOLD_WEBHOOK_SECRET: must be a Standard Webhooks secret/);
      expect(message).not.toContain(secret);
    }
  });

  it('refuses one of the pair without the other', () => {
    expect(refusal({ LEASEHOLD_WEBHOOK_URL: 'https://app.example.com/' })).toMatch(/^LEASEHOLD_WEBHOOK_SECRET: is required/);
    expect(refusal({ LEASEHOLD_WEBHOOK_SECRET: SECRET })).toMatch(/^LEASEHOLD_WEBHOOK_URL: is required/);
  });

  it('reads the endpoints file beside the environment endpoint, secrets from the environment', () => {
    const at = file('ok.yaml', [
      'endpoints:',
      '  - name: slots',
      '    url: http://127.0.0.1:3000/leasehold',
      '    secret: ${SLOTS_SECRET}',
      '    types: [hold.expired, hold.confirmed]',
      '    tenants: [acme, ""]',
      '    rate: { perSecond: 5, burst: 10 }',
      '    concurrency: 2',
    ].join('\n'));
    expect(endpoints({ LEASEHOLD_WEBHOOK_URL: 'https://a.example.com/', LEASEHOLD_WEBHOOK_SECRET: SECRET, LEASEHOLD_WEBHOOKS_FILE: at, SLOTS_SECRET: SECRET })).toEqual([
      expect.objectContaining({ name: 'default' }),
      { name: 'slots', url: 'http://127.0.0.1:3000/leasehold', secret: SECRET, types: ['hold.expired', 'hold.confirmed'], tenants: ['acme', ''], rate: { perSecond: 5, burst: 10 }, concurrency: 2 },
    ]);
  });

  it('refuses a broken endpoints file in one line naming the field', () => {
    const one = (body: string, env: Record<string, string> = {}) =>
      refusal({ LEASEHOLD_WEBHOOKS_FILE: file(`f${Math.random()}.yaml`, `endpoints:\n  - name: app\n${body}`), ...env });
    expect(one('    url: https://x.example.com/\n    secret: whsec_literal')).toMatch(/^LEASEHOLD_WEBHOOKS_FILE: endpoints\[0\]\.secret: is a secret/);
    expect(one('    url: https://x.example.com/\n    secret: ${UNSET_SECRET}')).toMatch(/endpoints\[0\]\.secret: \$\{UNSET_SECRET\} is not set/);
    expect(one('    url: https://x.example.com/\n    secret: ${S}', { S: 'nope' })).toMatch(/endpoints\[0\]\.secret: \$\{S\} must be a Standard Webhooks secret/);
    expect(one('    url: mailto:x@example.com\n    secret: ${S}', { S: SECRET })).toMatch(/endpoints\[0\]\.url: must be an absolute http/);
    expect(one('    url: https://x.example.com/\n    secret: ${S}\n    types: [hold.renamed]', { S: SECRET })).toMatch(/endpoints\[0\]\.types\[0\]: must be event types/);
    expect(one('    url: https://x.example.com/\n    secret: ${S}\n    concurrency: 0', { S: SECRET })).toMatch(/endpoints\[0\]\.concurrency: /);
    expect(one('    url: https://x.example.com/\n    secret: ${S}\n    colour: blue', { S: SECRET })).toMatch(/endpoints\[0\]/);
    expect(refusal({ LEASEHOLD_WEBHOOKS_FILE: path.join(dir, 'missing.yaml') })).toMatch(/^LEASEHOLD_WEBHOOKS_FILE: cannot read .*ENOENT/);
    expect(one('    url: https://x.example.com/\n    secret: ${S}', { S: SECRET })).toBe('accepted');
    // `default` is the environment's endpoint.
    const clash = file('clash.yaml', 'endpoints:\n  - name: default\n    url: https://x.example.com/\n    secret: ${S}\n');
    expect(refusal({ LEASEHOLD_WEBHOOKS_FILE: clash, S: SECRET, LEASEHOLD_WEBHOOK_URL: 'https://a.example.com/', LEASEHOLD_WEBHOOK_SECRET: SECRET })).toMatch(
      /endpoints\[0\]\.name: "default" is named twice/,
    );
  });

  it('`leasehold start` refuses a bad URL or endpoints file with exit 2 naming the variable, before opening a database', async () => {
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', LEASEHOLD_WEBHOOK_SECRET: SECRET };
    const url = await runCliInProcess(['start'], { ...env, LEASEHOLD_WEBHOOK_URL: 'app.example.com/hooks' });
    expect(url.code).toBe(2);
    expect(url.stderr).toContain('LEASEHOLD_WEBHOOK_URL');
    const broken = file('broken.yaml', 'endpoints: 3\n');
    const res = await runCliInProcess(['start'], { DATABASE_URL: env.DATABASE_URL, LEASEHOLD_WEBHOOKS_FILE: broken });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/LEASEHOLD_WEBHOOKS_FILE: endpoints: /);
  });
});
