import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { parseTopicArn, type SnsVerifierOptions } from './sns.js';
import { ResendSignature } from './verify.js';

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

/** Read and check the webhook variables; a bad one is a ConfigError naming it (exit 2 at start). */
export function webhookSettingsFromEnv(env: Env): WebhookSettings {
  const settings: WebhookSettings = {};
  const secret = read(env, 'RESEND_WEBHOOK_SECRET');
  if (secret !== undefined) {
    try {
      new ResendSignature(secret);
    } catch {
      throw new ConfigError('RESEND_WEBHOOK_SECRET', "must be the webhook's signing secret as Resend shows it (whsec_ followed by base64)");
    }
    settings.resend = { secret };
  }
  const user = read(env, 'POSTMARK_WEBHOOK_USER');
  const password = read(env, 'POSTMARK_WEBHOOK_PASSWORD');
  if ((user === undefined) !== (password === undefined)) {
    throw new ConfigError(user === undefined ? 'POSTMARK_WEBHOOK_USER' : 'POSTMARK_WEBHOOK_PASSWORD', 'is required when the other half of the Postmark webhook credentials is set');
  }
  if (user !== undefined && password !== undefined) {
    if (user.includes(':')) throw new ConfigError('POSTMARK_WEBHOOK_USER', 'must not contain ":" (basic auth)');
    if (password.length < 16) throw new ConfigError('POSTMARK_WEBHOOK_PASSWORD', 'must be at least 16 characters');
    settings.postmark = { user, password };
  }
  const topics = read(env, 'SES_WEBHOOK_TOPIC_ARN');
  if (topics !== undefined) {
    const topicArns = topics.split(',').map((t) => t.trim()).filter(Boolean);
    const bad = topicArns.find((arn) => !parseTopicArn(arn));
    if (bad !== undefined || topicArns.length === 0) {
      throw new ConfigError('SES_WEBHOOK_TOPIC_ARN', `must be SNS topic ARNs like arn:aws:sns:us-east-1:123456789012:ses-events, comma-separated (got ${JSON.stringify(bad ?? topics)})`);
    }
    settings.ses = { topicArns };
  }
  return settings;
}
