import type { Operations } from '../ops/operations.js';
import { cliActor, type CommandContext } from './context.js';

/**
 * Run `work` with the Operations the API uses (pause, rate limits, accounts,
 * tenants, suppressions), on a database the command closes afterwards.
 * Built as service.ts's operationsFor builds them, without loading the
 * server: an operator command starts in a fraction of the time.
 */
export async function withOperations(ctx: CommandContext, work: (ops: Operations) => Promise<void>): Promise<void> {
  const [{ Operations }, { accountsFromConfig }] = await Promise.all([import('../ops/operations.js'), import('../providers/registry.js')]);
  // These act on a running fleet's rows: a mistyped schema must fail, not
  // get migrated into an empty one that a pause or rate change then lands in.
  const db = await ctx.database({ poolSize: 2, migrations: 'require' });
  try {
    await work(
      new Operations({
        actor: cliActor(),
        pool: db.pool,
        schema: db.schema,
        logger: ctx.logger,
        initialRate: { perSecond: ctx.config.ratePerSecond, burst: ctx.config.rateBurst },
        accounts: accountsFromConfig(ctx.config),
      }),
    );
  } finally {
    await db.close();
  }
}
