import { Gauge, type Registry } from 'prom-client';
import type { WebhookBacklog } from '../tables/webhook-events.js';

/**
 * The application's webhooks at scrape time, from the database (every
 * instance reports the same): pending and given-up events and the oldest
 * pending age, by endpoint name. An endpoint's name is configuration, a
 * handful of values; its URL is never a label. An endpoint with nothing
 * pending or dead has no series (the scrape's part reads only those rows,
 * through the pending and listing indexes: read/scrape.ts).
 */
export function registerWebhookGauges(registry: Registry, reading: () => Promise<WebhookBacklog[] | undefined>): void {
  const gauges: Array<[string, string, (b: WebhookBacklog) => number]> = [
    ['leasehold_app_webhooks_pending', 'Application webhooks not yet delivered (waiting, leased or backing off), by endpoint.', (b) => b.pending],
    ['leasehold_app_webhooks_dead', 'Application webhooks given up after LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S and not replayed, by endpoint.', (b) => b.dead],
    ['leasehold_app_webhook_oldest_pending_age_seconds', 'Age of the oldest undelivered application webhook, by endpoint.', (b) => b.oldestPendingAgeSeconds],
  ];
  for (const [name, help, value] of gauges) {
    new Gauge({
      name,
      help,
      labelNames: ['endpoint'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const b of (await reading()) ?? []) this.set({ endpoint: b.endpoint }, value(b));
      },
    });
  }
}
