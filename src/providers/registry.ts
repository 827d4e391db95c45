import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { DEFAULT_ACCOUNT, type Account, type AccountProvider, type Accounts } from '../model/accounts.js';
import { parseAccounts } from '../model/accounts-file.js';
import { ConfigError } from '../errors.js';
import { importOptional } from '../runtime/optional-package.js';
import { checkKnownOptions } from '../db/arguments.js';
import type { EmailGateway } from './gateway.js';
import { SandboxGateway, type SandboxOptions } from './sandbox.js';

type Env = Config['env'];

/** An env value, with empty strings meaning unset (as loadConfig treats them). */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}


function number(env: Env, name: string, min: number, max: number): number | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new ConfigError(name, `must be a number from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return n;
}

/** Sandbox options from the optional SANDBOX_* variables. */
export function sandboxOptionsFromEnv(env: Env): SandboxOptions {
  const options: SandboxOptions = {};
  const latency = read(env, 'SANDBOX_LATENCY_MS');
  if (latency !== undefined) {
    const range = /^(\d+)\s*(?:-|\.\.)\s*(\d+)$/.exec(latency);
    if (range) {
      const [min, max] = [Number(range[1]), Number(range[2])];
      if (min > max) throw new ConfigError('SANDBOX_LATENCY_MS', `range must be min-max (got ${JSON.stringify(latency)})`);
      options.latencyMs = [min, max];
    } else {
      options.latencyMs = number(env, 'SANDBOX_LATENCY_MS', 0, 600_000)!;
    }
  }
  const perSecond = number(env, 'SANDBOX_RATE_PER_SECOND', 0, 1_000_000);
  if (perSecond === 0) throw new ConfigError('SANDBOX_RATE_PER_SECOND', 'must be greater than 0 (unset it for no limit)');
  if (perSecond !== undefined) options.rateLimit = { perSecond, burst: Math.max(1, Math.ceil(perSecond)) };
  const reject = number(env, 'SANDBOX_REJECT_RATE', 0, 1);
  if (reject !== undefined) options.rejectRate = reject;
  const fail = number(env, 'SANDBOX_FAIL_RATE', 0, 1);
  if (fail !== undefined) options.failRate = fail;
  const pause = number(env, 'SANDBOX_PAUSE_RATE', 0, 1);
  if (pause !== undefined) options.pauseRate = pause;
  const journal = read(env, 'SANDBOX_JOURNAL');
  if (journal !== undefined) options.journalPath = journal;
  const bounceRate = number(env, 'SANDBOX_BOUNCE_RATE', 0, 1);
  const complaintRate = number(env, 'SANDBOX_COMPLAINT_RATE', 0, 1);
  const eventDelayMs = number(env, 'SANDBOX_EVENT_DELAY_MS', 0, 3_600_000);
  if ((bounceRate ?? 0) + (complaintRate ?? 0) > 1) {
    throw new ConfigError('SANDBOX_COMPLAINT_RATE', 'SANDBOX_BOUNCE_RATE + SANDBOX_COMPLAINT_RATE must be at most 1');
  }
  if (bounceRate !== undefined || complaintRate !== undefined || eventDelayMs !== undefined) {
    options.events = {
      ...(bounceRate !== undefined ? { bounceRate } : {}),
      ...(complaintRate !== undefined ? { complaintRate } : {}),
      ...(eventDelayMs !== undefined ? { delayMs: eventDelayMs } : {}),
    };
  }
  return options;
}

/**
 * Where an adapter's settings come from: the single-provider environment
 * (RESEND_API_KEY ...) or an account in LEASEHOLD_ACCOUNTS_FILE (its
 * `apiKey`, references resolved). Either way a bad value fails naming its
 * field: the variable, or `accounts[1].baseUrl` in the file.
 */
interface Settings {
  get(key: string): string | undefined;
  fail(key: string, message: string): never;
  /** Why a missing setting is required, for the error. */
  readonly context: string;
}

/** Each provider's settings as environment variables (the single-provider setup). */
const ENV_NAMES: Record<Exclude<AccountProvider, 'sandbox'>, Record<string, string[]>> = {
  resend: { apiKey: ['RESEND_API_KEY'], baseUrl: ['RESEND_BASE_URL'] },
  postmark: { serverToken: ['POSTMARK_SERVER_TOKEN'], baseUrl: ['POSTMARK_BASE_URL'], messageStream: ['POSTMARK_MESSAGE_STREAM'] },
  ses: {
    region: ['AWS_REGION', 'AWS_DEFAULT_REGION'],
    endpoint: ['SES_ENDPOINT'],
    accessKeyId: ['AWS_ACCESS_KEY_ID'],
    secretAccessKey: ['AWS_SECRET_ACCESS_KEY'],
    sessionToken: ['AWS_SESSION_TOKEN'],
    configurationSet: ['SES_CONFIGURATION_SET'],
  },
  smtp: { url: ['SMTP_URL'], maxConnections: ['SMTP_MAX_CONNECTIONS'], maxMessages: ['SMTP_MAX_MESSAGES'] },
};

function envSettings(env: Env, provider: Exclude<AccountProvider, 'sandbox'>): Settings {
  const names = ENV_NAMES[provider];
  return {
    get: (key) => names[key]!.map((name) => read(env, name)).find((v) => v !== undefined),
    fail: (key, message) => {
      throw new ConfigError(names[key]![0]!, message);
    },
    context: `when EMAIL_PROVIDER=${provider}`,
  };
}

function fileSettings(account: Account, index: number): Settings {
  return {
    get: (key) => account.settings[key],
    fail: (key, message) => {
      throw new ConfigError('LEASEHOLD_ACCOUNTS_FILE', `accounts[${index}].${key}: ${message}`);
    },
    context: `for ${account.provider} accounts`,
  };
}

function required(settings: Settings, key: string, example = ''): string {
  const value = settings.get(key);
  if (value === undefined) return settings.fail(key, `is required ${settings.context}${example}`);
  return value;
}

function url(settings: Settings, key: string, protocols: string[]): string | undefined {
  const value = settings.get(key);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    // Never echoed for a URL that may carry credentials (SMTP).
    return settings.fail(key, key === 'url' ? 'must be a URL' : `must be a URL (got ${JSON.stringify(value)})`);
  }
  if (!protocols.includes(parsed.protocol)) {
    const got = key === 'url' ? ` (got ${parsed.protocol}//...)` : ` (got ${JSON.stringify(value)})`;
    return settings.fail(key, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}${got}`);
  }
  return value;
}

/** A whole number in [min, max], or undefined when unset; `what` says what it counts, for the error. */
function wholeNumber(settings: Settings, key: string, min: number, max: number, what: string): number | undefined {
  const value = settings.get(key);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || n < min || n > max) {
    return settings.fail(key, `must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)}): ${what}`);
  }
  return n;
}

/**
 * The adapters, loaded on first use: each pulls in its provider's SDK (the
 * AWS SDK alone takes longer to load than the rest of the library), and the
 * SDKs are optional dependencies that may not be installed.
 */
const adapters = {
  resend: () => importOptional('resend', 'EMAIL_PROVIDER=resend', () => import('./resend.js')),
  postmark: () => importOptional('postmark', 'EMAIL_PROVIDER=postmark', () => import('./postmark.js')),
  ses: () => importOptional('@aws-sdk/client-sesv2', 'EMAIL_PROVIDER=ses', () => import('./ses.js')),
  smtp: () => importOptional('nodemailer', 'EMAIL_PROVIDER=smtp', () => import('./smtp.js')),
};

/** The gateway of one provider from its settings, each validated first. */
async function gatewayFrom(provider: AccountProvider, settings: Settings | undefined, env: Env): Promise<EmailGateway> {
  if (provider === 'sandbox' || !settings) return new SandboxGateway(sandboxOptionsFromEnv(env));
  switch (provider) {
    case 'resend': {
      const baseUrl = url(settings, 'baseUrl', ['https:', 'http:']);
      const options = { apiKey: required(settings, 'apiKey'), ...(baseUrl ? { baseUrl } : {}) };
      const { ResendGateway } = await adapters.resend();
      return new ResendGateway(options);
    }
    case 'postmark': {
      const baseUrl = url(settings, 'baseUrl', ['https:', 'http:']);
      const messageStream = settings.get('messageStream');
      const options = {
        serverToken: required(settings, 'serverToken'),
        ...(baseUrl ? { baseUrl } : {}),
        ...(messageStream ? { messageStream } : {}),
      };
      const { PostmarkGateway } = await adapters.postmark();
      return new PostmarkGateway(options);
    }
    case 'ses': {
      const endpoint = url(settings, 'endpoint', ['https:', 'http:']);
      const region = settings.get('region') ?? 'us-east-1';
      if (!/^[a-z0-9-]+$/.test(region)) settings.fail('region', `must be a region name like us-east-1 (got ${JSON.stringify(region)})`);
      const accessKeyId = settings.get('accessKeyId');
      const secretAccessKey = settings.get('secretAccessKey');
      if (accessKeyId !== undefined && secretAccessKey === undefined) settings.fail('secretAccessKey', 'is required when the access key id is set');
      if (secretAccessKey !== undefined && accessKeyId === undefined) settings.fail('accessKeyId', 'is required when the secret access key is set');
      const sessionToken = settings.get('sessionToken');
      const configurationSetName = settings.get('configurationSet');
      const options = {
        region,
        ...(endpoint ? { endpoint } : {}),
        // Otherwise the SDK's default chain (shared profile, container or instance role).
        ...(accessKeyId && secretAccessKey
          ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } }
          : {}),
        ...(configurationSetName ? { configurationSetName } : {}),
      };
      const { SesGateway } = await adapters.ses();
      return new SesGateway(options);
    }
    case 'smtp': {
      const smtpUrl = url(settings, 'url', ['smtp:', 'smtps:']) ?? required(settings, 'url', ' (smtp://user:pass@host:587)');
      const maxConnections = wholeNumber(settings, 'maxConnections', 1, 1000, 'the most connections open to the SMTP server at once');
      const maxMessages = wholeNumber(settings, 'maxMessages', 1, 1_000_000, 'the messages one connection carries before a fresh one');
      const options = {
        url: smtpUrl,
        ...(maxConnections !== undefined ? { maxConnections } : {}),
        ...(maxMessages !== undefined ? { maxMessages } : {}),
      };
      const { SmtpGateway } = await adapters.smtp();
      return new SmtpGateway(options);
    }
    default: {
      const never: never = provider;
      throw new ConfigError('EMAIL_PROVIDER', `unknown provider ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The provider accounts this configuration sends through: those of
 * LEASEHOLD_ACCOUNTS_FILE, or else one account named `default` made of
 * the single-provider environment (EMAIL_PROVIDER, its variables,
 * LEASEHOLD_RATE_*, EMAIL_FROM), so that setup keeps working unchanged.
 * A file that cannot be read or is broken throws a ConfigError naming the
 * field (the CLI prints one line, exit 2).
 */
export function accountsFromConfig(config: Config): Accounts {
  if (config.accountsFile) {
    let text: string;
    try {
      text = readFileSync(config.accountsFile, 'utf8');
    } catch (error) {
      throw new ConfigError('LEASEHOLD_ACCOUNTS_FILE', `cannot read ${config.accountsFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    return parseAccounts(text, config.env);
  }
  return {
    accounts: [
      {
        name: DEFAULT_ACCOUNT,
        provider: config.emailProvider,
        rate: { perSecond: config.ratePerSecond, burst: config.rateBurst, unit: config.rateUnit },
        ...(config.sendBatch !== undefined ? { batch: config.sendBatch } : {}),
        from: config.emailFrom,
        settings: {},
      },
    ],
    failover: [DEFAULT_ACCOUNT],
  };
}

/** An account and the gateway that sends through it. */
export interface AccountGateway {
  account: Account;
  gateway: EmailGateway;
}

/**
 * A gateway per account, in failover order, with every account's settings
 * validated first: a missing or malformed one throws a ConfigError naming
 * it. A provider SDK that is not installed throws a MissingPackageError
 * naming the package (also exit 2).
 */
export async function createGateways(config: Config, accounts: Accounts = accountsFromConfig(config)): Promise<AccountGateway[]> {
  const out: AccountGateway[] = [];
  // Failover's accounts first, in its order; then the others, which only
  // tenants routed to them (tenant_policies.account) send through.
  const names = [...accounts.failover, ...accounts.accounts.map((a) => a.name).filter((n) => !accounts.failover.includes(n))];
  for (const name of names) {
    const index = accounts.accounts.findIndex((a) => a.name === name);
    const account = accounts.accounts[index]!;
    const settings =
      account.provider === 'sandbox' ? undefined : config.accountsFile ? fileSettings(account, index) : envSettings(config.env, account.provider);
    out.push({ account, gateway: await gatewayFrom(account.provider, settings, config.env) });
  }
  return out;
}

/** The gateway of the first account in failover (the one account of the single-provider environment). */
export async function createGateway(config: Config): Promise<EmailGateway> {
  // \`env\` is process.env itself by default: an object, not a plain one.
  checkKnownOptions('config', config, (r) => ({ env: r.z.custom<unknown>((v) => typeof v === 'object' && v !== null, 'required: the Config loadConfig() returns') }), { required: true });
  return (await createGateways(config))[0]!.gateway;
}
