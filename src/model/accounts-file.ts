import { parseConfigFile } from './config-file.js';
import { onFirstUse } from '../zod.js';
import { ACCOUNT_NAME, ACCOUNT_PROVIDERS, type Account, type AccountProvider, type Accounts } from './accounts.js';
import { BURST_RULE, isValidPerSecond, MAX_BURST, PER_SECOND_RULE } from './delivery-policy.js';

/**
 * The accounts file, LEASEHOLD_ACCOUNTS_FILE (model/accounts.ts has the
 * shapes). Pure: the file's text and the environment in, the accounts out,
 * or a ConfigError naming the field (`accounts[1].provider: ...`). Secrets
 * come from the environment only: a secret field must be a `${VAR}`
 * reference, never a literal, so the file can be committed.
 */

/** Names an accounts file may not give an account: the provider names (their /v1/webhooks/<provider> routes serve `default`). */
const RESERVED_NAMES: readonly string[] = ACCOUNT_PROVIDERS;

/**
 * Each provider's settings: which exist, which must be given, which are
 * secrets (references only), which may be written as YAML numbers (kept as
 * their decimal text, like every setting; the registry checks the range).
 */
const PROVIDER_SETTINGS: Record<AccountProvider, { required: string[]; optional: string[]; secret: string[]; numeric?: string[] }> = {
  sandbox: { required: [], optional: [], secret: [] },
  // webhook*: what POST /v1/webhooks/<account> verifies events against.
  resend: { required: ['apiKey'], optional: ['baseUrl', 'webhookSecret'], secret: ['apiKey', 'webhookSecret'] },
  postmark: {
    required: ['serverToken'],
    optional: ['baseUrl', 'messageStream', 'webhookUser', 'webhookPassword'],
    secret: ['serverToken', 'webhookPassword'],
  },
  ses: {
    required: [],
    optional: ['region', 'endpoint', 'accessKeyId', 'secretAccessKey', 'sessionToken', 'configurationSet', 'webhookTopicArn'],
    secret: ['secretAccessKey', 'sessionToken'],
  },
  // The URL carries the SMTP credentials (smtp://user:pass@host:587).
  smtp: { required: ['url'], optional: ['maxConnections', 'maxMessages'], secret: ['url'], numeric: ['maxConnections', 'maxMessages'] },
};


const COMMON_FIELDS = ['name', 'provider', 'rate', 'dailyQuota', 'batch', 'from'];
const MAX_DAILY_QUOTA = 2_147_483_647;
const REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

const fileSchema = onFirstUse((z) => {
  const rate = z.strictObject({
    perSecond: z.number({ error: PER_SECOND_RULE }).refine(isValidPerSecond, PER_SECOND_RULE),
    burst: z.number({ error: BURST_RULE }).int(BURST_RULE).min(1, BURST_RULE).max(MAX_BURST, BURST_RULE),
    unit: z.enum(['requests', 'emails'], { error: 'must be requests or emails' }).default('requests'),
  });
  const account = z.looseObject({
    name: z.string({ error: 'must be a string' }).regex(ACCOUNT_NAME, 'must be lowercase letters, digits, - and _ (at most 63), starting with a letter or digit'),
    provider: z.enum(ACCOUNT_PROVIDERS, { error: `must be one of ${ACCOUNT_PROVIDERS.join(', ')}` }),
    rate,
    // The quota is compared as a PostgreSQL integer (tables/rate-limiter/permits.ts).
    dailyQuota: z
      .number({ error: 'must be a whole number of emails' })
      .int('must be a whole number of emails')
      .min(1, 'must be at least 1')
      .max(MAX_DAILY_QUOTA, `must be at most ${MAX_DAILY_QUOTA}`)
      .optional(),
    batch: z.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be at least 1 (1 turns batching off)').optional(),
    from: z.string({ error: 'must be a string' }).min(3, 'must be a sender address').optional(),
  });
  return z.strictObject({
    accounts: z.array(account, { error: 'must be a list of accounts' }).min(1, 'must name at least one account'),
    failover: z.array(z.string({ error: 'must be account names' }), { error: 'must be a list of account names' }).min(1, 'must name at least one account').optional(),
  });
});

/**
 * Parse an accounts file. `source` names it in errors (the variable
 * LEASEHOLD_ACCOUNTS_FILE); `env` resolves the `${VAR}` references.
 */
export function parseAccounts(text: string, env: Readonly<Record<string, string | undefined>>, source = 'LEASEHOLD_ACCOUNTS_FILE'): Accounts {
  const { data, fail } = parseConfigFile(text, source, fileSchema());
  const seen = new Set<string>();
  const accounts = data.accounts.map((raw, i): Account => {
    const at = `accounts[${i}]`;
    if (seen.has(raw.name)) fail(`${at}.name`, `${JSON.stringify(raw.name)} is named twice`);
    // /v1/webhooks/<name> is the account's webhook; these names are the default account's provider routes.
    if (RESERVED_NAMES.includes(raw.name)) fail(`${at}.name`, `${JSON.stringify(raw.name)} is reserved (a provider's name); name the account for its purpose, e.g. primary`);
    seen.add(raw.name);
    const rules = PROVIDER_SETTINGS[raw.provider];
    const settings: Record<string, string> = {};
    for (const [key, value] of Object.entries(raw)) {
      if (COMMON_FIELDS.includes(key)) continue;
      if (!rules.required.includes(key) && !rules.optional.includes(key)) {
        const allowed = [...rules.required, ...rules.optional];
        fail(`${at}.${key}`, `is not a setting of ${raw.provider} accounts${allowed.length > 0 ? ` (${allowed.join(', ')})` : ''}`);
      }
      const numeric = rules.numeric?.includes(key) ?? false;
      if (typeof value !== 'string' && !(numeric && typeof value === 'number')) fail(`${at}.${key}`, numeric ? 'must be a number' : 'must be a string');
      const text = String(value);
      const reference = REFERENCE.exec(text);
      if (rules.secret.includes(key) && !reference) fail(`${at}.${key}`, 'is a secret: give it as a ${VAR} reference to the environment, never literally');
      const resolved = reference ? env[reference[1]!] : text;
      if (resolved === undefined || resolved === '') {
        if (rules.required.includes(key)) fail(`${at}.${key}`, `${value as string} is not set in the environment`);
        continue;
      }
      settings[key] = resolved;
    }
    for (const key of rules.required) if (settings[key] === undefined && raw[key] === undefined) fail(`${at}.${key}`, `is required for ${raw.provider} accounts`);
    return {
      name: raw.name,
      provider: raw.provider,
      rate: raw.rate,
      ...(raw.dailyQuota !== undefined ? { dailyQuota: raw.dailyQuota } : {}),
      ...(raw.batch !== undefined ? { batch: raw.batch } : {}),
      ...(raw.from !== undefined ? { from: raw.from } : {}),
      settings,
    };
  });
  const failover = data.failover ?? accounts.map((a) => a.name);
  failover.forEach((name, i) => {
    if (!seen.has(name)) fail(`failover[${i}]`, `${JSON.stringify(name)} is not an account in this file (${[...seen].join(', ')})`);
    if (failover.indexOf(name) !== i) fail(`failover[${i}]`, `${JSON.stringify(name)} is listed twice`);
  });
  return { accounts, failover };
}
