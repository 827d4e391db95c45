import type { FastifyInstance } from 'fastify';
import { ACCOUNT_NAME } from '../../model/accounts.js';
import { storableText } from '../../text.js';
import { expectNoBody, opsOf, parse, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import { pauseBody, policyBody } from './delivery.js';

type NameParams = { Params: { name: string } };

/**
 * An account's name in a path, by the accounts file's own rule: a name no
 * file could give is a 400 naming `name` before any lookup; a well-formed
 * name that is not configured is Operations' 404.
 */
export const accountNameSchema = storableText().regex(
  ACCOUNT_NAME,
  'must be an account name: lowercase letters, digits, - and _ (at most 63), starting with a letter or digit',
);

/**
 * The provider accounts (model/accounts.ts): each with its provider, rate,
 * tokens, pause, cooldown, backlog and sends in the last minute, and the
 * controls of one account (its rate limit, its pause) that
 * /v1/rate-limit and /v1/delivery/* have for the first one and the fleet.
 */
export function accountRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { ops } = ctx;
  const nameOf = (params: NameParams['Params']) => parse(accountNameSchema, params.name, 'name');

  app.get('/accounts', access('read', 'fleet'), async () => ({ failover: ops.accounts.failover, accounts: await ops.listAccounts() }));

  app.get<NameParams>('/accounts/:name', access('read', 'fleet'), async (request) => ops.getAccount(nameOf(request.params)));

  app.put<NameParams>('/accounts/:name/rate-limit', access('operate', 'fleet'), async (request) => {
    const name = nameOf(request.params);
    const body = parse(policyBody, request.body);
    return opsOf(request, ctx).setRateLimit(
      {
        ...(body.perSecond !== undefined ? { perSecond: body.perSecond } : {}),
        ...(body.burst !== undefined ? { burst: body.burst } : {}),
      },
      name,
    );
  });

  // The account's own pause: its intents fail over to the next account; the fleet's pause (/v1/delivery) is untouched.
  app.post<NameParams>('/accounts/:name/pause', access('operate', 'fleet'), async (request) => {
    const name = nameOf(request.params);
    const body = parse(pauseBody, request.body);
    return opsOf(request, ctx).pauseAccount(name, {
      ...(body?.reason !== undefined ? { reason: body.reason } : {}),
      ...(body?.forSeconds !== undefined ? { forSeconds: body.forSeconds } : {}),
    });
  });

  app.post<NameParams>('/accounts/:name/resume', access('operate', 'fleet'), async (request) => {
    const name = nameOf(request.params);
    expectNoBody(request.body);
    return opsOf(request, ctx).resumeAccount(name);
  });
}
