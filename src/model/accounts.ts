/**
 * Provider accounts, as LEASEHOLD_ACCOUNTS_FILE names them: several at once,
 * each with its own provider, credentials, quota (in the provider's own
 * unit: requests or emails a second, and an optional daily quota) and
 * sender, and the order intents try them in (`failover`). One model of "an
 * account's quota" for the limiter, batches (`batch`: emails per provider
 * request) and tenants to share.
 *
 * The shapes and names; model/accounts-file.ts reads the file (YAML and
 * its rules load only there, so the library entry does not pay for them).
 */

export const ACCOUNT_PROVIDERS = ['sandbox', 'resend', 'postmark', 'ses', 'smtp'] as const;
export type AccountProvider = (typeof ACCOUNT_PROVIDERS)[number];

/** What a limiter permit stands for on this account: one provider request, or one email (recipient). */
export type QuotaUnit = 'requests' | 'emails';

export interface Account {
  name: string;
  provider: AccountProvider;
  rate: { perSecond: number; burst: number; unit: QuotaUnit };
  /** Most emails a day, where the provider sets one (SES). */
  dailyQuota?: number;
  /** Emails per provider request; absent: the provider's documented maximum. */
  batch?: number;
  from?: string;
  /** The provider's own settings (apiKey, baseUrl, region ...), references resolved. */
  settings: Record<string, string>;
}

export interface Accounts {
  accounts: Account[];
  /** Account names, in the order an intent tries them. */
  failover: string[];
}

/** The name the single-provider environment (EMAIL_PROVIDER) gets as its one account. */
export const DEFAULT_ACCOUNT = 'default';

export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

