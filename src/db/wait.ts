import { ConfigError, isConnectionError, LeaseholdError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { CONFIGURATION_CODES } from './hosts.js';

/**
 * A process that starts while its database is away (down, restarting,
 * failing over) waits for it instead of exiting: under a supervisor an
 * exit means a restart delay that grows (Kubernetes' CrashLoopBackOff
 * reaches minutes), so the fleet would come back long after the database.
 *
 * What is waited for is a lost or refused connection (errors.ts
 * isConnectionError: refused, reset, "starting up", "shutting down", every
 * host a standby). A wrong password, a role the server does not allow or a
 * database that does not exist will not mend by waiting: they are
 * configuration errors, reported at once (exit 2).
 */

/** The database did not come back within LEASEHOLD_DB_WAIT_S (exit 1). */
export class DatabaseUnavailableError extends LeaseholdError {
  constructor(message: string, options?: ErrorOptions) {
    super('database_unavailable', message, 503, options);
  }
}

export interface WaitOptions {
  /** Seconds to wait in all: Infinity forever, 0 not at all. */
  waitS: number;
  logger: Logger;
  /** The hosts, for the log lines (never the URL: it may carry a password). */
  hosts: string;
  /** Longest pause between two attempts (default 5 s). */
  maxDelayMs?: number;
  /** The clock and the pause between tries (tests move time instead of waiting). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const CONFIGURATION_WORDS: Record<string, string> = {
  '28P01': 'the server refused the password',
  '28000': 'the server does not let this user in',
  '3D000': 'the database does not exist',
};

/** The error, or what caused it (a migration that failed when its connection did). */
function codeOf(error: unknown): string | undefined {
  if (error instanceof LeaseholdError) return error.cause === undefined ? undefined : codeOf(error.cause);
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? code : undefined;
}

function transient(error: unknown): boolean {
  return isConnectionError(error) || ((error as { cause?: unknown })?.cause !== undefined && transient((error as { cause: unknown }).cause));
}

/**
 * Run `attempt` (the process's first work on the database: connecting and
 * its migrations) until it succeeds, waiting between tries with a capped,
 * jittered back-off while the database is unreachable. Logs once that it
 * waits and why, and once when it gets through.
 */
export async function waitForDatabase<T>(attempt: () => Promise<T>, options: WaitOptions): Promise<T> {
  const { waitS, logger, hosts } = options;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const now = options.now ?? Date.now;
  const started = now();
  let waiting: string | undefined;
  for (let tries = 1; ; tries++) {
    try {
      const result = await attempt();
      if (waiting !== undefined) {
        logger.info({ event: 'db.connected', hosts, waitedS: Math.round((now() - started) / 100) / 10, attempts: tries }, 'database reachable: starting');
      }
      return result;
    } catch (error) {
      const code = codeOf(error);
      const message = (error as Error)?.message ?? String(error);
      if (code !== undefined && CONFIGURATION_CODES.includes(code)) {
        throw new ConfigError('DATABASE_URL', `${CONFIGURATION_WORDS[code]} (${hosts}): ${message} [${code}]; fix the URL's user, password or database name`);
      }
      if (!transient(error)) throw error;
      const elapsedMs = now() - started;
      if (elapsedMs >= waitS * 1000) {
        const waited = waitS === 0 ? 'LEASEHOLD_DB_WAIT_S=0: not waiting' : `gave up after ${Math.round(elapsedMs / 1000)} s (LEASEHOLD_DB_WAIT_S=${waitS})`;
        throw new DatabaseUnavailableError(`the database is unreachable (${hosts}): ${message}; ${waited}`, { cause: error });
      }
      if (waiting === undefined) {
        waiting = message;
        logger.warn(
          { event: 'db.waiting', hosts, error: message, ...(code ? { code } : {}), waitS: Number.isFinite(waitS) ? waitS : 'forever' },
          `waiting for the database (${hosts}): ${message}`,
        );
      }
      const cap = Math.min(maxDelayMs, 100 * 2 ** Math.min(tries, 10));
      const delay = cap / 2 + Math.random() * (cap / 2);
      await sleep(Math.min(delay, Math.max(0, waitS * 1000 - elapsedMs)));
    }
  }
}
