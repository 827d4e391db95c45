import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { DEFAULTS } from '../defaults.js';
import { ConfigError } from '../errors.js';
import { DEFAULT_WEBHOOK_ENDPOINT, type WebhookEndpoint } from '../model/webhook-events.js';
import { parseWebhookEndpoints } from '../model/webhooks-file.js';

/**
 * The configured endpoints: LEASEHOLD_WEBHOOK_URL's (`default`, every event,
 * every tenant) and LEASEHOLD_WEBHOOKS_FILE's, checked; a ConfigError names
 * the variable or the file's field (the CLI exits 2). Empty: no webhooks,
 * and the lane does not start.
 */
export function webhookEndpointsFromConfig(config: Config): WebhookEndpoint[] {
  const endpoints: WebhookEndpoint[] = [];
  if (config.webhookUrl && config.webhookSecret) {
    endpoints.push({
      name: DEFAULT_WEBHOOK_ENDPOINT,
      url: config.webhookUrl,
      secret: config.webhookSecret,
      rate: { perSecond: DEFAULTS.webhookRatePerSecond, burst: DEFAULTS.webhookRateBurst },
      concurrency: config.webhookConcurrency,
    });
  }
  if (config.webhooksFile) {
    let text: string;
    try {
      text = readFileSync(config.webhooksFile, 'utf8');
    } catch (error) {
      throw new ConfigError('LEASEHOLD_WEBHOOKS_FILE', `cannot read ${config.webhooksFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    const rate = { perSecond: DEFAULTS.webhookRatePerSecond, burst: DEFAULTS.webhookRateBurst };
    endpoints.push(...parseWebhookEndpoints(text, config.env, { rate, concurrency: DEFAULTS.webhookConcurrency, taken: endpoints.map((e) => e.name) }));
  }
  return endpoints;
}
