import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { importOptional } from '../runtime/optional-package.js';
import type { EmailGateway } from './gateway.js';
import { SandboxGateway, type SandboxOptions } from './sandbox.js';

type Env = Config['env'];

/** An env value, with empty strings meaning unset (as loadConfig treats them). */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function required(env: Env, name: string, why: string): string {
  const value = read(env, name);
  if (value === undefined) throw new ConfigError(name, `is required ${why}`);
  return value;
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ConfigError(name, `must be a URL (got ${JSON.stringify(value)})`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')} (got ${JSON.stringify(value)})`);
  }
  return value;
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

/**
 * The gateway named by EMAIL_PROVIDER, with its own variables (read from
 * `config.env`) validated first: a missing or malformed one throws a
 * ConfigError naming it, which the CLI prints as one line (exit 2). Then the
 * adapter is loaded; a provider SDK that is not installed throws a
 * MissingPackageError naming the package (also exit 2).
 */
export async function createGateway(config: Config): Promise<EmailGateway> {
  const env = config.env;
  switch (config.emailProvider) {
    case 'sandbox':
      return new SandboxGateway(sandboxOptionsFromEnv(env));
    case 'resend': {
      const baseUrl = url(env, 'RESEND_BASE_URL', ['https:', 'http:']);
      const options = {
        apiKey: required(env, 'RESEND_API_KEY', 'when EMAIL_PROVIDER=resend'),
        ...(baseUrl ? { baseUrl } : {}),
      };
      const { ResendGateway } = await adapters.resend();
      return new ResendGateway(options);
    }
    case 'postmark': {
      const baseUrl = url(env, 'POSTMARK_BASE_URL', ['https:', 'http:']);
      const messageStream = read(env, 'POSTMARK_MESSAGE_STREAM');
      const options = {
        serverToken: required(env, 'POSTMARK_SERVER_TOKEN', 'when EMAIL_PROVIDER=postmark'),
        ...(baseUrl ? { baseUrl } : {}),
        ...(messageStream ? { messageStream } : {}),
      };
      const { PostmarkGateway } = await adapters.postmark();
      return new PostmarkGateway(options);
    }
    case 'ses': {
      const endpoint = url(env, 'SES_ENDPOINT', ['https:', 'http:']);
      const region = read(env, 'AWS_REGION') ?? read(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1';
      if (!/^[a-z0-9-]+$/.test(region)) throw new ConfigError('AWS_REGION', `must be a region name like us-east-1 (got ${JSON.stringify(region)})`);
      const accessKeyId = read(env, 'AWS_ACCESS_KEY_ID');
      const secretAccessKey = read(env, 'AWS_SECRET_ACCESS_KEY');
      if (accessKeyId !== undefined && secretAccessKey === undefined) {
        throw new ConfigError('AWS_SECRET_ACCESS_KEY', 'is required when AWS_ACCESS_KEY_ID is set');
      }
      if (secretAccessKey !== undefined && accessKeyId === undefined) {
        throw new ConfigError('AWS_ACCESS_KEY_ID', 'is required when AWS_SECRET_ACCESS_KEY is set');
      }
      const sessionToken = read(env, 'AWS_SESSION_TOKEN');
      const configurationSetName = read(env, 'SES_CONFIGURATION_SET');
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
      const smtpUrl = url(env, 'SMTP_URL', ['smtp:', 'smtps:']);
      if (!smtpUrl) throw new ConfigError('SMTP_URL', 'is required when EMAIL_PROVIDER=smtp (smtp://user:pass@host:587)');
      const { SmtpGateway } = await adapters.smtp();
      return new SmtpGateway({ url: smtpUrl });
    }
    default: {
      const never: never = config.emailProvider;
      throw new ConfigError('EMAIL_PROVIDER', `unknown provider ${JSON.stringify(never)}`);
    }
  }
}
