import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { parseTopicArn, type SnsVerifierOptions } from './sns.js';
import { ResendSignature } from './verify.js';
import type { Account } from '../model/accounts.js';

/**
 * What the webhook endpoints verify against. A provider left out is not
 * configured: its endpoint answers 401 `webhook_not_configured` to
 * everything (never 404 or 5xx), so a provider set up before leasehold is
 * keeps retrying until it is.
 */
export interface WebhookSettings {
  /** `RESEND_WEBHOOK_SECRET`: the endpoint's Svix signing secret (`whsec_...`). */
  resend?: { secret: string };
  /** `POSTMARK_WEBHOOK_USER` / `POSTMARK_WEBHOOK_PASSWORD`: the basic-auth credentials in the webhook URL. */
  postmark?: { user: string; password: string };
  /** `SES_WEBHOOK_TOPIC_ARN`: the SNS topics (comma-separated) SES publishes events to. */
  ses?: SnsVerifierOptions;
}

type Env = Config['env'];

const read = (env: Env, name: string): string | undefined => {
  const value = env[name]?.trim();
  return value ? value : undefined;
};

/** Where webhook settings are read from, and how a bad one is named. */
interface Source {
  get(key: 'resendSecret' | 'postmarkUser' | 'postmarkPassword' | 'sesTopics'): string | undefined;
  fail(key: 'resendSecret' | 'postmarkUser' | 'postmarkPassword' | 'sesTopics', message: string): never;
}

/** The rules, once, for the environment's variables and an account's fields. */
function webhookSettings(source: Source): WebhookSettings {
  const settings: WebhookSettings = {};
  const secret = source.get('resendSecret');
  if (secret !== undefined) {
    try {
      new ResendSignature(secret);
    } catch {
      source.fail('resendSecret', "must be the webhook's signing secret as Resend shows it (whsec_ followed by base64)");
    }
    settings.resend = { secret };
  }
  const user = source.get('postmarkUser');
  const password = source.get('postmarkPassword');
  if ((user === undefined) !== (password === undefined)) {
    source.fail(user === undefined ? 'postmarkUser' : 'postmarkPassword', 'is required when the other half of the Postmark webhook credentials is set');
  }
  if (user !== undefined && password !== undefined) {
    if (user.includes(':')) source.fail('postmarkUser', 'must not contain ":" (basic auth)');
    if (password.length < 16) source.fail('postmarkPassword', 'must be at least 16 characters');
    settings.postmark = { user, password };
  }
  const topics = source.get('sesTopics');
  if (topics !== undefined) {
    const topicArns = topics.split(',').map((t) => t.trim()).filter(Boolean);
    const bad = topicArns.find((arn) => !parseTopicArn(arn));
    if (bad !== undefined || topicArns.length === 0) {
      source.fail('sesTopics', `must be SNS topic ARNs like arn:aws:sns:us-east-1:123456789012:ses-events, comma-separated (got ${JSON.stringify(bad ?? topics)})`);
    }
    settings.ses = { topicArns };
  }
  return settings;
}

const ENV_NAMES = {
  resendSecret: 'RESEND_WEBHOOK_SECRET',
  postmarkUser: 'POSTMARK_WEBHOOK_USER',
  postmarkPassword: 'POSTMARK_WEBHOOK_PASSWORD',
  sesTopics: 'SES_WEBHOOK_TOPIC_ARN',
} as const;

/** Read and check the webhook variables (the `default` account's, at /v1/webhooks/<provider>); a bad one is a ConfigError naming it (exit 2 at start). */
export function webhookSettingsFromEnv(env: Env): WebhookSettings {
  return webhookSettings({
    get: (key) => read(env, ENV_NAMES[key]),
    fail: (key, message) => {
      throw new ConfigError(ENV_NAMES[key], message);
    },
  });
}

/** An account's fields for its webhook (model/accounts.ts), by provider. */
const ACCOUNT_FIELDS = {
  resendSecret: 'webhookSecret',
  postmarkUser: 'webhookUser',
  postmarkPassword: 'webhookPassword',
  sesTopics: 'webhookTopicArn',
} as const;

/** One account's webhook endpoint, POST /v1/webhooks/<account>: its provider and what it verifies against. */
export interface AccountWebhook {
  provider: 'resend' | 'postmark' | 'ses';
  settings: WebhookSettings;
}

/**
 * The webhook endpoints of the accounts in an accounts file: one per
 * account of a provider that sends events (Resend, Postmark, SES), verified
 * with that account's own secret (an account without one answers 401
 * webhook_not_configured, like the environment's). `index` names the field
 * in errors (`accounts[1].webhookSecret`).
 */
export function accountWebhooks(accounts: ReadonlyArray<Pick<Account, 'name' | 'provider' | 'settings'>>): Map<string, AccountWebhook> {
  const out = new Map<string, AccountWebhook>();
  accounts.forEach((account, index) => {
    if (account.provider !== 'resend' && account.provider !== 'postmark' && account.provider !== 'ses') return;
    const settings = webhookSettings({
      get: (key) => account.settings[ACCOUNT_FIELDS[key]]?.trim() || undefined,
      fail: (key, message) => {
        throw new ConfigError('LEASEHOLD_ACCOUNTS_FILE', `accounts[${index}].${ACCOUNT_FIELDS[key]}: ${message}`);
      },
    });
    out.set(account.name, { provider: account.provider, settings });
  });
  return out;
}
