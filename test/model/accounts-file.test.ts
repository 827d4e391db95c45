import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseAccounts } from '../../src/model/accounts-file.js';

const env = { RESEND_API_KEY: 're_123', POSTMARK_SERVER_TOKEN: 'pm-token' };

const good = `
accounts:
  - name: primary
    provider: resend
    apiKey: \${RESEND_API_KEY}
    baseUrl: \${RESEND_BASE_URL}
    rate: { perSecond: 2, burst: 2, unit: requests }
    dailyQuota: 50000
    from: "Support <support@acme.example>"
  - name: backup
    provider: postmark
    serverToken: \${POSTMARK_SERVER_TOKEN}
    rate: { perSecond: 10, burst: 10 }
failover: [primary, backup]
`;

/** The one line a broken file is refused with. */
function refusal(text: string, environment: Record<string, string> = env): string {
  try {
    parseAccounts(text, environment);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('the accounts file', () => {
  it('reads the accounts with their rates, units and resolved secrets, in failover order', () => {
    const { accounts, failover } = parseAccounts(good, env);
    expect(failover).toEqual(['primary', 'backup']);
    expect(accounts[0]).toEqual({
      name: 'primary',
      provider: 'resend',
      rate: { perSecond: 2, burst: 2, unit: 'requests' },
      dailyQuota: 50000,
      from: 'Support <support@acme.example>',
      // An optional reference to an unset variable is simply absent.
      settings: { apiKey: 're_123' },
    });
    expect(accounts[1]!.rate.unit).toBe('requests');
    expect(accounts[1]!.settings).toEqual({ serverToken: 'pm-token' });
  });

  it('takes the SMTP pool sizes as YAML numbers or references, kept as text for the registry to check', () => {
    const smtp = `
accounts:
  - name: relay
    provider: smtp
    url: \${SMTP_URL}
    maxConnections: 10
    maxMessages: \${SMTP_MAX_MESSAGES}
    rate: { perSecond: 5, burst: 5 }
`;
    const { accounts } = parseAccounts(smtp, { SMTP_URL: 'smtp://u:p@relay.example:587', SMTP_MAX_MESSAGES: '250' });
    expect(accounts[0]!.settings).toEqual({ url: 'smtp://u:p@relay.example:587', maxConnections: '10', maxMessages: '250' });
    expect(refusal(smtp.replace('maxConnections: 10', 'maxConnections: [10]'), { SMTP_URL: 'smtp://x' })).toBe(
      'LEASEHOLD_ACCOUNTS_FILE: accounts[0].maxConnections: must be a number',
    );
    // Numbers only where a setting is one.
    expect(refusal(good.replace('baseUrl: ${RESEND_BASE_URL}', 'baseUrl: 8080'), env)).toMatch(/accounts\[0\]\.baseUrl: must be a string$/);
  });

  it('without failover, tries the accounts in the order listed', () => {
    const { failover } = parseAccounts(good.replace('failover: [primary, backup]', ''), env);
    expect(failover).toEqual(['primary', 'backup']);
  });

  it.each([
    ['an unknown provider', good.replace('provider: postmark', 'provider: mailgun'), /^LEASEHOLD_ACCOUNTS_FILE: accounts\[1\]\.provider: must be one of sandbox, resend, postmark, ses, smtp$/],
    ['a missing secret', good, /^LEASEHOLD_ACCOUNTS_FILE: accounts\[1\]\.serverToken: \$\{POSTMARK_SERVER_TOKEN\} is not set in the environment$/, { RESEND_API_KEY: 're_123' }],
    ['a secret written literally', good.replace('${RESEND_API_KEY}', 're_live_abc'), /accounts\[0\]\.apiKey: is a secret: give it as a \$\{VAR\} reference/],
    ['a required setting left out', good.replace('    serverToken: ${POSTMARK_SERVER_TOKEN}\n', ''), /accounts\[1\]\.serverToken: is required for postmark accounts/],
    ['duplicate names', good.replace('name: backup', 'name: primary'), /accounts\[1\]\.name: "primary" is named twice/],
    ['a failover account that does not exist', good.replace('[primary, backup]', '[primary, spare]'), /failover\[1\]: "spare" is not an account in this file \(primary, backup\)/],
    ['a failover account listed twice', good.replace('[primary, backup]', '[primary, primary]'), /failover\[1\]: "primary" is listed twice/],
    ['a setting of another provider', good.replace('    dailyQuota: 50000\n', '    serverToken: ${POSTMARK_SERVER_TOKEN}\n'), /accounts\[0\]\.serverToken: is not a setting of resend accounts \(apiKey, baseUrl, webhookSecret\)/],
    ['a rate out of range', good.replace('perSecond: 10', 'perSecond: 0'), /accounts\[1\]\.rate\.perSecond: must be a number from 0\.001/],
    ['an unknown unit', good.replace('unit: requests', 'unit: messages'), /accounts\[0\]\.rate\.unit: must be requests or emails/],
    ['a bad name', good.replace('name: backup', 'name: Backup Account'), /accounts\[1\]\.name: must be lowercase letters/],
    ['no accounts', 'accounts: []', /accounts: must name at least one account/],
    ['an unknown top-level field', `${good}\nretries: 3\n`, /retries: unknown field/],
    ['YAML that does not parse', 'accounts: [', /not valid YAML/],
  ])('refuses %s with one line naming the field', (_what, text, line, environment?: Record<string, string>) => {
    const message = refusal(text, environment ?? env);
    expect(message).toMatch(line);
    expect(message).not.toContain('\n');
    // Never the secret's value.
    expect(message).not.toContain('re_123');
    expect(message).not.toContain('pm-token');
  });
});
