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
