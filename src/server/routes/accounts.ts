import { z } from 'zod';
import { ACCOUNT_NAME } from '../../model/accounts.js';
import { storableText } from '../../text.js';
import { expectNoBody, opsOf, type ApiContext } from '../context.js';
import { access } from '../auth.js';
import { answers, BAD_INPUT, json, type ZodApp } from '../shapes/common.js';
import { AccountShape, AccountsShape } from '../shapes/accounts.js';
import { RateLimitShape } from '../shapes/delivery.js';
import { pauseBody, pauseOptions, policyBody, policyChange } from './delivery.js';

/**
 * An account's name in a path, by the accounts file's own rule: a name no
 * file could give is a 400 naming `name` before any lookup; a well-formed
 * name that is not configured is Operations' 404.
 */
export const accountNameSchema = storableText().regex(
  ACCOUNT_NAME,
  'must be an account name: lowercase letters, digits, - and _ (at most 63), starting with a letter or digit',
);

const nameParams = z.object({ name: accountNameSchema.describe('the account name (from LEASEHOLD_ACCOUNTS_FILE; `default` without one)') });
const NOT_FOUND = 'no such account is configured (GET /v1/accounts lists them)';

/**
 * The provider accounts (model/accounts.ts): each with its provider, rate,
 * tokens, pause, cooldown, backlog and sends in the last minute, and the
 * controls of one account (its rate limit, its pause) that
 * /v1/rate-limit and /v1/delivery/* have for the first one and the fleet.
 */
export function accountRoutes(app: ZodApp, ctx: ApiContext): void {
  const { ops } = ctx;

  app.get(
    '/accounts',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'every provider account with its rate, permits, pause, cooldown, backlog and sends in the last minute, and the failover order',
        tags: ['accounts'],
        response: answers({ 200: json(AccountsShape, 'the accounts') }),
      },
    },
    async () => ({ failover: ops.accounts.failover, accounts: await ops.listAccounts() }),
  );

  app.get(
    '/accounts/:name',
    {
      ...access('read', 'fleet'),
      schema: {
        summary: 'one account',
        tags: ['accounts'],
        params: nameParams,
        response: answers({ 200: json(AccountShape, 'the account') }, { 400: BAD_INPUT, 404: NOT_FOUND }),
      },
    },
    async (request) => ops.getAccount(request.params.name),
  );

  app.put(
    '/accounts/:name/rate-limit',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: "change one account's limiter; either field alone keeps the other; other accounts keep theirs",
        tags: ['accounts'],
        params: nameParams,
        body: policyBody,
        response: answers({ 200: json(RateLimitShape, 'the new policy') }, { 400: BAD_INPUT, 404: NOT_FOUND }, { body: true }),
      },
    },
    async (request) => opsOf(request, ctx).setRateLimit(policyChange(request.body), request.params.name),
  );

  // The account's own pause: its intents fail over to the next account; the fleet's pause (/v1/delivery) is untouched.
  app.post(
    '/accounts/:name/pause',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: 'pause one account (its intents fail over to the next account; the fleet keeps running); forSeconds lifts it by itself',
        tags: ['accounts'],
        params: nameParams,
        body: pauseBody,
        response: answers({ 200: json(AccountShape, 'paused') }, { 400: BAD_INPUT, 404: NOT_FOUND }, { body: true }),
      },
    },
    async (request) => opsOf(request, ctx).pauseAccount(request.params.name, pauseOptions(request.body)),
  );

  app.post(
    '/accounts/:name/resume',
    {
      ...access('operate', 'fleet'),
      schema: {
        summary: "lift one account's own pause (the fleet's is /v1/delivery/resume)",
        tags: ['accounts'],
        params: nameParams,
        response: answers({ 200: json(AccountShape, 'running') }, { 400: BAD_INPUT, 404: NOT_FOUND }, { body: true }),
      },
    },
    async (request) => {
      expectNoBody(request.body);
      return opsOf(request, ctx).resumeAccount(request.params.name);
    },
  );
}
