import type { Command } from 'commander';
import type { ContextFactory } from '../context.js';

export function registerMigrate(program: Command, context: ContextFactory): void {
  program
    .command('migrate')
    .description('apply pending migrations to LEASEHOLD_SCHEMA (safe to run from several processes at once)')
    .action(async () => {
      const ctx = context();
      const db = await ctx.database({ poolSize: 2, migrations: 'apply' });
      try {
        const { rows } = await db.pool.query<{ name: string }>(
          `SELECT name FROM "${db.schema}".migrations ORDER BY id`,
        );
        ctx.out(`schema ${db.schema} is at ${rows.at(-1)?.name ?? 'no migrations'} (${rows.length} applied)`);
      } finally {
        await db.close();
      }
    });
}
