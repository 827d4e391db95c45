import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { PostmarkGateway } from '../../src/providers/postmark.js';
import { createGateway, createGateways, sandboxOptionsFromEnv } from '../../src/providers/registry.js';
import { ResendGateway } from '../../src/providers/resend.js';
import { SandboxGateway } from '../../src/providers/sandbox.js';
import { SesGateway } from '../../src/providers/ses.js';
import { SmtpGateway } from '../../src/providers/smtp.js';

const gatewayFor = (env: Record<string, string>) => createGateway(loadConfig(env));

async function configError(env: Record<string, string>): Promise<ConfigError> {
  try {
    await gatewayFor(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('createGateway', () => {
  it('defaults to the sandbox', async () => {
    expect(await gatewayFor({})).toBeInstanceOf(SandboxGateway);
  });

  it('builds each real provider from its variables', async () => {
    expect(await gatewayFor({ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: 're_x' })).toBeInstanceOf(ResendGateway);
    expect(await gatewayFor({ EMAIL_PROVIDER: 'postmark', POSTMARK_SERVER_TOKEN: 'pm' })).toBeInstanceOf(PostmarkGateway);
    expect(await gatewayFor({ EMAIL_PROVIDER: 'ses', AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' })).toBeInstanceOf(SesGateway);
    expect(await gatewayFor({ EMAIL_PROVIDER: 'ses' })).toBeInstanceOf(SesGateway); // SDK default credential chain
    expect(await gatewayFor({ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://u:p@127.0.0.1:2525' })).toBeInstanceOf(SmtpGateway);
  });

  it('reports the idempotency of each provider', async () => {
    expect((await gatewayFor({ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: 're_x' })).idempotent).toBe(true);
    expect((await gatewayFor({ EMAIL_PROVIDER: 'postmark', POSTMARK_SERVER_TOKEN: 'pm' })).idempotent).toBe(false);
    expect((await gatewayFor({ EMAIL_PROVIDER: 'ses' })).idempotent).toBe(false);
    expect((await gatewayFor({ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525' })).idempotent).toBe(false);
  });

  it.each([
    [{ EMAIL_PROVIDER: 'resend' }, 'RESEND_API_KEY'],
    [{ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: 're_x', RESEND_BASE_URL: 'not a url' }, 'RESEND_BASE_URL'],
    [{ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: 're_x', RESEND_BASE_URL: 'ftp://x' }, 'RESEND_BASE_URL'],
    [{ EMAIL_PROVIDER: 'postmark' }, 'POSTMARK_SERVER_TOKEN'],
    [{ EMAIL_PROVIDER: 'postmark', POSTMARK_SERVER_TOKEN: 'pm', POSTMARK_BASE_URL: '::' }, 'POSTMARK_BASE_URL'],
    [{ EMAIL_PROVIDER: 'ses', SES_ENDPOINT: 'localhost:4566' }, 'SES_ENDPOINT'],
    [{ EMAIL_PROVIDER: 'ses', AWS_REGION: 'US East' }, 'AWS_REGION'],
    [{ EMAIL_PROVIDER: 'ses', AWS_ACCESS_KEY_ID: 'a' }, 'AWS_SECRET_ACCESS_KEY'],
    [{ EMAIL_PROVIDER: 'smtp' }, 'SMTP_URL'],
    [{ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'http://mail.example.com' }, 'SMTP_URL'],
    [{ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525', SMTP_MAX_CONNECTIONS: '0' }, 'SMTP_MAX_CONNECTIONS'],
    [{ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525', SMTP_MAX_CONNECTIONS: '2.5' }, 'SMTP_MAX_CONNECTIONS'],
    [{ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525', SMTP_MAX_MESSAGES: 'many' }, 'SMTP_MAX_MESSAGES'],
    [{ SANDBOX_REJECT_RATE: '2' }, 'SANDBOX_REJECT_RATE'],
    [{ SANDBOX_LATENCY_MS: 'slow' }, 'SANDBOX_LATENCY_MS'],
    [{ SANDBOX_RATE_PER_SECOND: '0' }, 'SANDBOX_RATE_PER_SECOND'],
  ])('%o -> ConfigError naming %s', async (env, variable) => {
    const error = await configError(env as Record<string, string>);
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`${variable}: `)).toBe(true);
    expect(error.message).not.toContain('\n');
  });

  it('SMTP pool sizes come from SMTP_MAX_CONNECTIONS and SMTP_MAX_MESSAGES, else nodemailer\'s 5 and 100', async () => {
    const sized = (await gatewayFor({ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525', SMTP_MAX_CONNECTIONS: '12', SMTP_MAX_MESSAGES: '500' })) as SmtpGateway;
    expect([sized.maxConnections, sized.maxMessages]).toEqual([12, 500]);
    const plain = (await gatewayFor({ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525' })) as SmtpGateway;
    expect([plain.maxConnections, plain.maxMessages]).toEqual([5, 100]);
  });

  it('a bad SMTP pool size says which variable, the rule and what it counts', async () => {
    expect((await configError({ EMAIL_PROVIDER: 'smtp', SMTP_URL: 'smtp://127.0.0.1:2525', SMTP_MAX_CONNECTIONS: '5000' })).message).toBe(
      'SMTP_MAX_CONNECTIONS: must be a whole number from 1 to 1000 (got "5000"): the most connections open to the SMTP server at once',
    );
  });

  it('an SMTP account in the accounts file takes maxConnections and maxMessages, refusing a bad one by its field', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'leasehold-registry-')), 'accounts.yaml');
    const accounts = (pool: string) =>
      `accounts:\n  - name: relay\n    provider: smtp\n    url: \${SMTP_URL}\n${pool}    rate: { perSecond: 5, burst: 5 }\n`;
    const config = { LEASEHOLD_ACCOUNTS_FILE: file, SMTP_URL: 'smtp://u:p@127.0.0.1:2525' };
    writeFileSync(file, accounts('    maxConnections: 8\n    maxMessages: 40\n'));
    const gateway = (await createGateways(loadConfig(config)))[0]!.gateway as SmtpGateway;
    expect([gateway.maxConnections, gateway.maxMessages]).toEqual([8, 40]);
    writeFileSync(file, accounts('    maxMessages: 0\n'));
    await expect(createGateways(loadConfig(config))).rejects.toThrow(
      'LEASEHOLD_ACCOUNTS_FILE: accounts[0].maxMessages: must be a whole number from 1 to 1000000 (got "0"): the messages one connection carries before a fresh one',
    );
  });

  it('an empty variable counts as unset', async () => {
    expect((await configError({ EMAIL_PROVIDER: 'resend', RESEND_API_KEY: '' })).variable).toBe('RESEND_API_KEY');
  });
});

describe('sandbox options from the environment', () => {
  it('reads latency (a number or a range), rate limit, injection rates and journal', () => {
    expect(
      sandboxOptionsFromEnv({
        SANDBOX_LATENCY_MS: '5-20',
        SANDBOX_RATE_PER_SECOND: '2.5',
        SANDBOX_REJECT_RATE: '0.1',
        SANDBOX_FAIL_RATE: '0.2',
        SANDBOX_PAUSE_RATE: '0',
        SANDBOX_JOURNAL: '/tmp/j.jsonl',
      }),
    ).toEqual({
      latencyMs: [5, 20],
      rateLimit: { perSecond: 2.5, burst: 3 },
      rejectRate: 0.1,
      failRate: 0.2,
      pauseRate: 0,
      journalPath: '/tmp/j.jsonl',
    });
    expect(sandboxOptionsFromEnv({ SANDBOX_LATENCY_MS: '7' })).toEqual({ latencyMs: 7 });
    expect(sandboxOptionsFromEnv({})).toEqual({});
  });
});
