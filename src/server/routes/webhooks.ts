import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ValidationError } from '../../errors.js';
import { ingestEvents, type IngestResult } from '../../events/ingest.js';
import type { ParsedEvents } from '../../events/parse-common.js';
import { parsePostmarkEvent } from '../../events/parse-postmark.js';
import { parseResendEvent } from '../../events/parse-resend.js';
import { parseSesEvent } from '../../events/parse-ses.js';
import { SnsRejectedError, SnsUnavailableError, SnsVerifier } from '../../events/sns.js';
import { PostmarkCredentials, ResendSignature, WebhookRejected } from '../../events/verify.js';
import type { AccountWebhook, WebhookSettings } from '../../events/webhook-config.js';
import { DEFAULT_ACCOUNT } from '../../model/accounts.js';
import type { ApiContext } from '../context.js';
import { ApiError, type ErrorBody } from '../errors.js';
import { json as jsonAnswer, openAnswers } from '../shapes/common.js';
import { WebhookAnswerShape, type WebhookAnswer } from '../shapes/webhooks.js';

/** SNS messages are up to 256 KiB; SES event records with full headers come close. */
export const WEBHOOK_BODY_LIMIT_BYTES = 512 * 1024;

type Provider = 'resend' | 'postmark' | 'ses';
type Answer = WebhookAnswer;

/** Every answer of a webhook: the body is the provider's own (kept raw for its signature), so none is declared. */
const webhookAnswers = (extra: { 404?: string } = {}) =>
  openAnswers(
    { 200: jsonAnswer(WebhookAnswerShape, 'stored, duplicate or ignored events counted (or an SNS subscription confirmed)') },
    {
      400: 'a proven but malformed body (invalid_json, invalid_body, validation_error naming the field)',
      401: 'not proven: webhook_not_configured, missing_signature, invalid_signature, stale_message, invalid_credentials (with WWW-Authenticate: Basic) or topic_not_allowed',
      413: 'the body is larger than the limit (512 KiB)',
      415: 'the body is neither application/json nor text/plain (what SNS sends)',
      ...extra,
      503: 'verification_unavailable: AWS could not be reached to check or confirm an SNS message (Retry-After: 60; SNS delivers it again); or the database is unreachable, or this server is shutting down',
    },
  );

const webhookSchema = (provider: string, proof: string) => ({
  summary: `${provider} delivery events (not behind the bearer token: ${proof})`,
  tags: ['webhooks'],
  security: [],
  response: webhookAnswers(),
});

/**
 * `POST /v1/webhooks/resend|postmark|ses` (the `default` account's) and
 * `POST /v1/webhooks/<account>` (each account's of LEASEHOLD_ACCOUNTS_FILE): provider events in. These are not
 * behind the /v1 bearer token (providers cannot send it) but behind each
 * provider's own proof: Resend's Svix signature over the raw body, Postmark's
 * basic-auth credentials, an AWS signature on an SNS message from an allowed
 * topic. Anything unproven is a 401 with a code saying why
 * (`webhook_not_configured`, `missing_signature`, `invalid_signature`,
 * `stale_message`, `invalid_credentials`, `topic_not_allowed`) and is not
 * read further; a proven but malformed body is a 400; an event type
 * leasehold does not store (opens, clicks) is a 200 saying it was ignored,
 * so the provider does not retry it. Nothing a client can send yields a 5xx.
 *
 * Registered as its own plugin, so the raw-body parser (needed for the
 * signature) applies to these routes only.
 */
export function webhookRoutes(ctx: ApiContext, settings: WebhookSettings, accounts: ReadonlyMap<string, AccountWebhook> = new Map()) {
  const { pool, schema, logger, metrics } = ctx;

  const ingest = async (parsed: ParsedEvents): Promise<Answer> => {
    // Events apply to intents whichever account sent them; a hard bounce
    // suppresses the address for every account.
    const result: IngestResult = await ingestEvents(pool, schema, parsed.events, { logger, metrics });
    const { received, stored, duplicates, unmatched, suppressed } = result;
    return { received, stored, duplicates, unmatched, suppressed, ...(parsed.ignored ? { ignored: parsed.ignored } : {}) };
  };

  /** One request: verify, parse, ingest; every refusal in the one error shape. */
  const handle = async (provider: Provider, account: string, reply: FastifyReply, work: () => Promise<Answer>) => {
    try {
      const answer = await work();
      metrics.webhookRequests.inc({ provider, result: 'accepted' });
      return reply.code(200).send(answer);
    } catch (error) {
      if (error instanceof WebhookRejected || error instanceof SnsRejectedError) {
        const result = error.code === 'webhook_not_configured' ? 'not_configured' : 'unauthorized';
        metrics.webhookRequests.inc({ provider, result });
        logger.warn({ event: 'webhook.rejected', provider, account, code: error.code }, 'webhook request refused');
        if (provider === 'postmark' && error.code === 'invalid_credentials') reply.header('www-authenticate', 'Basic realm="leasehold webhooks"');
        const body: ErrorBody = { error: { code: error.code, message: error.message } };
        return reply.code(401).type('application/json; charset=utf-8').send(body);
      }
      if (error instanceof SnsUnavailableError) {
        // AWS could not be reached to check or confirm a message from an
        // allowed topic: a 503 makes SNS deliver it again later.
        metrics.webhookRequests.inc({ provider, result: 'unavailable' });
        logger.warn({ event: 'webhook.unavailable', provider, account, reason: error.message }, 'could not verify with AWS now');
        const body: ErrorBody = { error: { code: 'verification_unavailable', message: error.message } };
        return reply.code(503).header('retry-after', '60').type('application/json; charset=utf-8').send(body);
      }
      if (error instanceof ValidationError || error instanceof ApiError) metrics.webhookRequests.inc({ provider, result: 'invalid' });
      throw error;
    }
  };

  /**
   * The endpoint of one provider verified against `settings`: the default
   * account's (environment variables, named in `unset`) or an account's.
   */
  const endpoint = (provider: Provider, account: string, settings: WebhookSettings, unset: string) => {
    const notConfigured = () => new WebhookRejected('webhook_not_configured', `${provider} webhooks of account ${account} are not configured on this server (${unset})`);
    switch (provider) {
      case 'resend': {
        const resend = settings.resend ? new ResendSignature(settings.resend.secret) : undefined;
        return (request: FastifyRequest, reply: FastifyReply) =>
          handle(provider, account, reply, async () => {
            if (!resend) throw notConfigured();
            const raw = rawBody(request);
            const svixId = resend.verify(raw, request.headers);
            return ingest(parseResendEvent(json(raw), svixId));
          });
      }
      case 'postmark': {
        const postmark = settings.postmark ? new PostmarkCredentials(settings.postmark.user, settings.postmark.password) : undefined;
        return (request: FastifyRequest, reply: FastifyReply) =>
          handle(provider, account, reply, async () => {
            if (!postmark) throw notConfigured();
            postmark.verify(request.headers);
            return ingest(parsePostmarkEvent(json(rawBody(request))));
          });
      }
      case 'ses': {
        const sns = settings.ses ? new SnsVerifier(settings.ses) : undefined;
        return (request: FastifyRequest, reply: FastifyReply) =>
          handle(provider, account, reply, async () => {
            if (!sns) throw notConfigured();
            const body = json(rawBody(request));
            if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ApiError(400, 'invalid_body', 'body: must be an SNS message (a JSON object)');
            const envelope = await sns.verify(body as Record<string, unknown>);
            if (envelope.Type === 'SubscriptionConfirmation') {
              await sns.confirmSubscription(envelope);
              logger.info({ event: 'sns.subscription_confirmed', account, topicArn: envelope.TopicArn }, 'SNS subscription confirmed');
              return { confirmed: true };
            }
            if (envelope.Type === 'UnsubscribeConfirmation') {
              logger.warn({ event: 'sns.unsubscribed', account, topicArn: envelope.TopicArn }, 'SNS says this endpoint was unsubscribed');
              return { ignored: 'UnsubscribeConfirmation' };
            }
            let message: unknown;
            try {
              message = JSON.parse(envelope.Message);
            } catch {
              throw new ValidationError('Message', 'must be an SES event record (JSON)');
            }
            return ingest(parseSesEvent(message));
          });
      }
    }
  };

  const byAccount = new Map([...accounts].map(([name, hook]) => [name, endpoint(hook.provider, name, hook.settings, `set this account's webhook fields in LEASEHOLD_ACCOUNTS_FILE`)]));

  return async (plugin: FastifyInstance): Promise<void> => {
    const app = plugin.withTypeProvider<ZodTypeProvider>();
    // The raw text, untouched, for signature checks; JSON is parsed after.
    // SNS posts JSON as text/plain.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string', bodyLimit: WEBHOOK_BODY_LIMIT_BYTES }, (_request, body, done) => {
      done(null, typeof body === 'string' ? body : body.toString('utf8'));
    });
    const bodyLimit = WEBHOOK_BODY_LIMIT_BYTES;

    // The single-provider routes serve the `default` account, verified by the environment's variables.
    app.post(
      '/resend',
      { bodyLimit, schema: webhookSchema('Resend', 'a Svix signature with RESEND_WEBHOOK_SECRET') },
      endpoint('resend', DEFAULT_ACCOUNT, settings, 'set RESEND_WEBHOOK_SECRET'),
    );
    app.post(
      '/postmark',
      { bodyLimit, schema: webhookSchema('Postmark', 'basic-auth credentials POSTMARK_WEBHOOK_USER/PASSWORD') },
      endpoint('postmark', DEFAULT_ACCOUNT, settings, 'set POSTMARK_WEBHOOK_USER and POSTMARK_WEBHOOK_PASSWORD'),
    );
    app.post(
      '/ses',
      { bodyLimit, schema: webhookSchema('Amazon SES via SNS', 'an SNS signature from a topic in SES_WEBHOOK_TOPIC_ARN') },
      endpoint('ses', DEFAULT_ACCOUNT, settings, 'set SES_WEBHOOK_TOPIC_ARN'),
    );

    // Each account's own: POST /v1/webhooks/<account>, with that account's secret.
    const accountSchema = {
      ...webhookSchema("An account's provider", "that provider's proof, with the webhook fields of the account in LEASEHOLD_ACCOUNTS_FILE"),
      // Any name: one that takes no webhooks here is a 404 naming those that do.
      params: z.object({ account: z.string().describe('an account of LEASEHOLD_ACCOUNTS_FILE with webhook fields') }),
      response: webhookAnswers({ 404: 'not_found: no account of that name takes webhooks here (the message names those that do)' }),
    };
    app.post('/:account', { bodyLimit, schema: accountSchema }, async (request, reply) => {
      const handler = byAccount.get(request.params.account);
      if (!handler) {
        const known = [...byAccount.keys()];
        throw new ApiError(404, 'not_found', `no account ${JSON.stringify(request.params.account.slice(0, 64))} takes webhooks here${known.length > 0 ? ` (${known.join(', ')})` : ''}`);
      }
      return handler(request, reply);
    });
  };
}

function rawBody(request: FastifyRequest): string {
  return typeof request.body === 'string' ? request.body : '';
}

function json(text: string): unknown {
  if (text.trim() === '') throw new ApiError(400, 'invalid_json', 'body: must not be empty');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError(400, 'invalid_json', 'body: is not valid JSON');
  }
}
