/**
 * `leasehold/server`: the HTTP API, webhooks and dashboard (Fastify) for an
 * application that serves them itself. A separate entry so that
 * `import { createHold } from 'leasehold'` does not load Fastify.
 */
export { buildApp, startApiServer, type ApiOptions, type ApiServer } from './server/app.js';
export { webhookSettingsFromEnv, type WebhookSettings } from './events/webhook-config.js';
