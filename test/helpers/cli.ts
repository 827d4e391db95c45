import { cliPath, startNode } from './processes.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `leasehold <args>` as a child process to completion. */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = startNode(cliPath, args, env);
  const { code } = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/**
 * Run `leasehold <args>` in this process: the real program (buildProgram)
 * and context (configuration from `env`), with stdout and commander's own
 * messages captured, mapped to an exit code as main() maps them. For
 * commands whose code under test is in src/ (a child process runs dist/,
 * which only `npm test` builds).
 */
export async function runCliInProcess(args: string[], env: Record<string, string>): Promise<CliResult> {
  const { Command, CommanderError } = await import('commander');
  const { buildProgram } = await import('../../src/cli/main.js');
  const { createContext, describeFailure, EXIT_OK, EXIT_USAGE } = await import('../../src/cli/context.js');
  const stdout: string[] = [];
  const stderr: string[] = [];
  let context: ReturnType<typeof createContext> | undefined;
  const program = buildProgram(() => (context ??= createContext(env, (line) => stdout.push(line))));
  const capture = (command: InstanceType<typeof Command>): void => {
    command.configureOutput({ writeOut: (text) => stdout.push(text.replace(/\n$/, '')), writeErr: (text) => stderr.push(text.replace(/\n$/, '')) });
    for (const sub of command.commands) capture(sub);
  };
  capture(program);
  let code: number;
  try {
    await program.parseAsync(['node', 'leasehold', ...args]);
    code = EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      code = error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    } else {
      const failure = describeFailure(error);
      stderr.push(failure.line);
      code = failure.code;
    }
  }
  return { code, stdout: stdout.length > 0 ? `${stdout.join('\n')}\n` : '', stderr: stderr.length > 0 ? `${stderr.join('\n')}\n` : '' };
}
