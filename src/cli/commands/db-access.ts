import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import type { ContextFactory } from '../context.js';
import { CliExit, EXIT_FAILURE } from '../context.js';

/**
 * Reaching leasehold's database by hand (the drill's SQL, an operator's
 * query): `db-url` prints the connection URL, `psql` opens a psql session on
 * it with LEASEHOLD_SCHEMA first on the search_path. With DATABASE_URL unset
 * that is the embedded server, whose port and password are generated.
 */
export function registerDbAccess(program: Command, context: ContextFactory): void {
  program
    .command('db-url')
    .description('print the PostgreSQL connection URL in use (DATABASE_URL, or the running embedded server); it includes the password')
    .action(async () => {
      const ctx = context();
      const { config } = ctx;
      if (config.databaseUrl) {
        ctx.out(config.databaseUrl);
        return;
      }
      // Printing the URL of a server this command started would be useless:
      // it stops again when the command exits.
      const { embeddedRunningUrl } = await import('../../db/embedded.js');
      const url = await embeddedRunningUrl(config.dataDir);
      if (!url) {
        throw new CliExit(
          EXIT_FAILURE,
          `leasehold: the embedded PostgreSQL under ${config.dataDir} is not running; start leasehold (npm start) in another terminal, or use leasehold psql, which starts it`,
        );
      }
      ctx.out(url);
    });

  program
    .command('psql')
    .description('open psql on the database in use, with LEASEHOLD_SCHEMA first on the search_path (starts the embedded server if needed); arguments after -- go to psql')
    .argument('[psqlArgs...]', 'passed to psql, e.g. -- -c "SELECT count(*) FROM email_outbox"')
    .action(async (psqlArgs: string[]) => {
      const ctx = context();
      const db = await ctx.database({ poolSize: 1, migrations: 'require' });
      try {
        const code = await runPsql(db.url, ctx.config.schema, psqlArgs);
        if (code !== 0) throw new CliExit(code, `leasehold: psql exited with ${code}`);
      } finally {
        await db.close();
      }
    });
}

/** search_path for PGOPTIONS: the schema as a quoted identifier, spaces escaped for libpq's option splitting. */
function searchPathOption(schema: string): string {
  const quoted = `"${schema.replace(/"/g, '""')}"`;
  return `-c search_path=${quoted.replace(/([\\ ])/g, '\\$1')},public`;
}

function runPsql(url: string, schema: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    // Ctrl-C belongs to psql (it cancels the query); this process waits for
    // psql to exit and then stops the embedded server if it started it.
    const ignore = () => {};
    process.on('SIGINT', ignore);
    const done = () => process.off('SIGINT', ignore);
    const child = spawn('psql', [url, ...args], {
      stdio: 'inherit',
      env: { ...process.env, PGOPTIONS: [process.env.PGOPTIONS, searchPathOption(schema)].filter(Boolean).join(' ') },
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      done();
      reject(
        error.code === 'ENOENT'
          ? new CliExit(
              EXIT_FAILURE,
              'leasehold: psql is not installed (Debian: apt-get install postgresql-client); or point any client at the URL `leasehold db-url` prints',
            )
          : error,
      );
    });
    child.on('exit', (code, signal) => {
      done();
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}
