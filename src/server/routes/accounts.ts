import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context.js';

/**
 * The provider accounts (model/accounts.ts): each with its provider, rate,
 * tokens, pause, cooldown, backlog and sends in the last minute.
 */
export function accountRoutes(app: FastifyInstance, { ops }: ApiContext): void {
  app.get('/accounts', async () => ({ failover: ops.accounts.failover, accounts: await ops.listAccounts() }));
}
