import { userInfo } from 'node:os';
import { loadConfig, unknownVariables, type Config } from '../config.js';
import type { AuditActor } from '../model/audit-actions.js';
import type { Database } from '../db/database.js';
import { DEFAULTS } from '../defaults.js';
import { ConfigError, LeaseholdError, MissingPackageError, SchemaNotMigratedError, TemplatesBrokenError } from '../errors.js';
import { createLogger, wantsPrettyLogs, type Logger } from '../observability/logger.js';

/** Exit codes: 0 ok, 1 failure, 2 usage or configuration. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Thrown by commands to end with a specific exit code and one line. */
export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CommandContext {
  config: Config;
  logger: Logger;
  /**
   * Opens the database; the command closes it. Each command says what it
   * needs of the schema: services and `migrate` apply migrations; commands
   * that read or operate on existing rows require them and create nothing
   * (a mistyped LEASEHOLD_SCHEMA then fails with exit 2 instead of
   * creating an empty schema that looks healthy).
   */
  database(options: { poolSize?: number; migrations: 'apply' | 'require' | 'none' }): Promise<Database>;
  out: (line: string) => void;
}

export interface ContextOptions {
  /**
   * A service (start, api, the workers) keeps its structured log at
   * LOG_LEVEL. Every other command is for a person reading its output: its
   * log shows only warnings and errors, unless `verbose`.
   */
  service?: boolean;
  /** --verbose: info events too (or LOG_LEVEL, when that says debug or trace). */
  verbose?: boolean;
}

/**
 * Commands get the context through this, so `--help` works without a valid
 * configuration. A service passes `{ service: true }`.
 */
export type ContextFactory = (options?: Pick<ContextOptions, 'service'>) => CommandContext;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
type Level = (typeof LEVELS)[number];

/** The log level a command runs at: LOG_LEVEL, raised to warn for a person's command, lowered to info by --verbose. */
export function commandLogLevel(configured: Level, options: ContextOptions): Level {
  const rank = (level: Level) => LEVELS.indexOf(level);
  if (options.verbose) return rank(configured) < rank('info') ? configured : 'info';
  if (options.service) return configured;
  return rank(configured) > rank('warn') ? configured : 'warn';
}

export function createContext(env: Record<string, string | undefined>, out: (line: string) => void, options: ContextOptions = { service: true }): CommandContext {
  const config = loadConfig(env);
  // Logs go to stderr so command output on stdout stays clean for scripts:
  // JSON lines, or readable lines when stderr is a terminal.
  const logger = createLogger({ level: commandLogLevel(config.logLevel, options), destination: process.stderr, pretty: wantsPrettyLogs(process.stderr) });
  for (const unknown of unknownVariables(env)) {
    logger.warn(
      { event: 'config.unknown_variable', variable: unknown.name, ...(unknown.didYouMean ? { didYouMean: unknown.didYouMean } : {}) },
      `${unknown.name} is not a leasehold setting and is ignored${unknown.didYouMean ? ` (did you mean ${unknown.didYouMean}?)` : ''}`,
    );
  }
  return {
    config,
    logger,
    out,
    // pg and the migrations load only for a command that opens the database.
    database: async ({ migrations, ...pool }) => {
      const { openDatabase } = await import('../db/database.js');
      // A service waits for its database as long as it takes (a supervisor
      // restarting it would only come back later); a person's command briefly.
      const waitS = config.dbWaitS ?? (options.service ? Infinity : DEFAULTS.dbWaitCommandS);
      return openDatabase(config, logger, { ...pool, waitS, ...(migrations === 'none' ? {} : { migrations }) });
    },
  };
}

/** The audit log's actor for a command: `cli:<os user>`. */
export function cliActor(): AuditActor {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.LOGNAME ?? 'unknown';
  }
  return { name: `cli:${user}` };
}

/** Map an error to the one line printed and the exit code. */
export function describeFailure(error: unknown): { code: number; line: string } {
  if (error instanceof CliExit) return { code: error.code, line: error.message };
  if (error instanceof ConfigError) return { code: EXIT_USAGE, line: `leasehold: invalid configuration: ${error.message}` };
  if (error instanceof SchemaNotMigratedError || error instanceof TemplatesBrokenError || error instanceof MissingPackageError) return { code: EXIT_USAGE, line: `leasehold: ${error.message}` };
  if ((error as NodeJS.ErrnoException)?.code === 'EADDRINUSE') {
    // Node's message ("listen EADDRINUSE: address already in use ...") names neither variable.
    const { address, port } = error as { address?: string; port?: number };
    return {
      code: EXIT_FAILURE,
      line: `leasehold: cannot listen on ${address ?? 'the address'}:${port ?? '?'}: the port is already in use; set PORT to a free port (0 picks one), or stop what is using it`,
    };
  }
  if (error instanceof LeaseholdError) return { code: EXIT_FAILURE, line: `leasehold: ${error.message}` };
  return { code: EXIT_FAILURE, line: `leasehold: ${(error as Error)?.message ?? String(error)}` };
}
