import { Command, CommanderError } from 'commander';
import { createContext, describeFailure, EXIT_OK, EXIT_USAGE, type CommandContext, type ContextFactory } from './context.js';
import { registerMigrate } from './commands/migrate.js';
import { registerWorkers } from './commands/workers.js';
import { registerOps } from './commands/ops.js';
import { registerAccounts } from './commands/accounts.js';
import { registerStatus } from './commands/status.js';
import { registerTrace } from './commands/trace.js';
import { registerDemo } from './commands/demo.js';
import { registerCapacity } from './commands/capacity.js';
import { registerRetention } from './commands/retention.js';
import { registerSuppressions } from './commands/suppressions.js';
import { registerTenants } from './commands/tenants.js';
import { registerTemplates } from './commands/templates.js';
import { registerCompareTimers } from './commands/compare-timers.js';
import { registerDrill } from './commands/drill.js';
import { registerDbAccess } from './commands/db-access.js';
import { registerAccess } from './commands/access.js';
import { registerWebhooks } from './commands/webhooks.js';
import { packageVersion } from '../runtime/version.js';

/**
 * Build the `leasehold` program. Each command file registers its commands
 * (names, options, help) and loads what its action needs only when it runs:
 * `--help`, `--version` and a command start without the server, pg or zod
 * unless they use them. The context (configuration, logger, database) is
 * created only when a command runs, so `--help` works without a valid
 * configuration.
 */
export function buildProgram(context: ContextFactory): Command {
  const program = new Command('leasehold')
    .description('Durable hold expiry and rate-limited email notification on PostgreSQL')
    .version(packageVersion(), '-v, --version', 'print the version (also -V)')
    .option('--verbose', "log info events to stderr too (a command's log shows only warnings and errors; start, api and the workers log at LOG_LEVEL)")
    .showHelpAfterError('(run with --help for usage)')
    // Each command's help lists the program's own options (--verbose) too,
    // not a parent command's (`accounts --json` is no option of `accounts pause`).
    // The commands made below inherit this.
    .configureHelp({ showGlobalOptions: true, visibleGlobalOptions: (command) => (command.parent ? programOf(command).options.filter((option) => !option.hidden) : []) })
    .exitOverride();
  registerMigrate(program, context);
  registerWorkers(program, context);
  registerTrace(program, context);
  registerOps(program, context);
  registerAccounts(program, context);
  registerStatus(program, context);
  registerDemo(program, context);
  registerCapacity(program, context);
  registerRetention(program, context);
  registerSuppressions(program, context);
  registerTenants(program, context);
  registerTemplates(program, context);
  registerCompareTimers(program, context);
  registerDrill(program, context);
  registerDbAccess(program, context);
  registerAccess(program, context);
  registerWebhooks(program, context);
  for (const command of program.commands) command.exitOverride();
  return program;
}

const programOf = (command: Command): Command => (command.parent ? programOf(command.parent) : command);

export async function main(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const out = (line: string) => process.stdout.write(line + '\n');
  let context: CommandContext | undefined;
  const program: Command = buildProgram(
    (options) => (context ??= createContext(env, out, { service: options?.service === true, verbose: program.opts<{ verbose?: boolean }>().verbose === true })),
  );
  try {
    // -V, the flag of earlier versions, still prints the version (commander takes one short flag).
    await program.parseAsync(argv[2] === '-V' && argv.length === 3 ? [...argv.slice(0, 2), '--version'] : argv);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0) return EXIT_OK;
      return EXIT_USAGE;
    }
    const { code, line } = describeFailure(error);
    process.stderr.write(line + '\n');
    return code;
  }
}
