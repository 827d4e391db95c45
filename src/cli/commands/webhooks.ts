import { InvalidArgumentError, type Command } from 'commander';
import { iso } from '../../format.js';
import { WEBHOOK_ENDPOINT_NAME, WEBHOOK_ENDPOINT_NAME_RULE, WEBHOOK_STATES, type WebhookState } from '../../model/webhook-events.js';
import type { ContextFactory } from '../context.js';
import { withOperations } from '../operations.js';

/**
 * `leasehold webhooks list|replay|deactivate`: the application's webhooks
 * (src/webhooks/), each endpoint's backlog, a given-up one sent again under
 * its own webhook-id, audited as the API's replay is, and an endpoint
 * turned off, audited.
 */

function stateArg(value: string): WebhookState {
  if (!WEBHOOK_STATES.includes(value as WebhookState)) throw new InvalidArgumentError(`must be one of ${WEBHOOK_STATES.join(', ')}`);
  return value as WebhookState;
}

function limitArg(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError('must be a whole number from 1 to 500');
  return n;
}

function idArg(value: string): string {
  if (!/^msg_[A-Za-z0-9_]{1,196}$/.test(value)) throw new InvalidArgumentError('must be a webhook id (msg_..., from `leasehold webhooks list`)');
  return value;
}

function endpointArg(value: string): string {
  if (!WEBHOOK_ENDPOINT_NAME.test(value)) throw new InvalidArgumentError(WEBHOOK_ENDPOINT_NAME_RULE);
  return value;
}

export function registerWebhooks(program: Command, context: ContextFactory): void {
  const webhooks = program
    .command('webhooks')
    .description("the application's webhooks: list them (given-up ones with --state dead), replay a given-up one, turn an endpoint off");
  webhooks
    .command('list', { isDefault: true })
    .description("webhooks newest first, and each endpoint's backlog (pending, dead, oldest pending age)")
    .option('--state <state>', `only this state (${WEBHOOK_STATES.join(', ')})`, stateArg)
    .option('--limit <n>', 'at most this many (1-500)', limitArg, 20)
    .option('--json', 'print as JSON (what GET /v1/webhook-deliveries answers)')
    .action(async (options: { state?: WebhookState; limit: number; json?: boolean }) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const list = await ops.webhooks.list({ limit: options.limit, ...(options.state ? { state: options.state } : {}) });
        const backlog = await ops.webhooks.backlog();
        if (options.json) {
          ctx.out(JSON.stringify({ webhooks: list, backlog }, null, 2));
          return;
        }
        for (const b of backlog) ctx.out(`endpoint ${b.endpoint}: ${b.pending} pending (oldest ${Math.round(b.oldestPendingAgeSeconds)} s), ${b.dead} given up`);
        if (list.length === 0) ctx.out(options.state ? `no ${options.state} webhooks` : 'no webhooks');
        for (const w of list) {
          const last = w.lastError ? `, last: ${w.lastError}` : '';
          ctx.out(`${iso(w.createdAt)}  ${w.id}  ${w.endpoint}  ${w.type}  ${w.holdId ?? '-'}  ${w.state} after ${w.attempts} attempt(s)${last}`);
        }
      });
    });
  webhooks
    .command('replay')
    .description('send a given-up (dead) webhook again, under the same webhook-id')
    .argument('<id>', 'the webhook id (msg_...)', idArg)
    .action(async (id: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        const event = await ops.webhooks.replay(id);
        ctx.out(`webhook ${event.id} (${event.type} to ${event.endpoint}) is pending again (replay ${event.replays})`);
      });
    });
  webhooks
    .command('deactivate')
    .description('turn an endpoint off: no more events are written for it (its pending ones stay); a delivery process configured with it turns it on again')
    .argument('<name>', 'the endpoint name (from the webhooks file, or `default`)', endpointArg)
    .action(async (name: string) => {
      const ctx = context();
      await withOperations(ctx, async (ops) => {
        await ops.webhooks.deactivateEndpoint(name);
        ctx.out(`webhook endpoint ${name} is off: no events are written for it until a delivery process configured with it starts`);
      });
    });
}
