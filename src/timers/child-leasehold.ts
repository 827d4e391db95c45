import { DeliveryWorker } from '../delivery/worker.js';
import { ExpiryWorker } from '../holds/expiry-worker.js';
import { intentsChannel, Listener } from '../db/listener.js';
import { silentLogger } from '../observability/logger.js';
import type { EmailGateway } from '../providers/gateway.js';
import type { ChildTarget } from './child-target.js';
import { postToSink } from './sink.js';

/** Short enough that a killed worker's sends come back within the run; longer than the send timeout. */
export const LEASE_MS = 2000;

/**
 * A gateway to the recording sink. Like SES or SMTP it cannot deduplicate,
 * so the delivery lane passes on what it knows: `previousOutcomeUnknown`
 * (an earlier attempt never reported back) becomes the send's
 * possible-duplicate flag.
 */
export function sinkGateway(sinkUrl: string): EmailGateway {
  return {
    name: 'sink',
    idempotent: false,
    async send(message, context) {
      try {
        const receipt = await postToSink(
          sinkUrl,
          'leasehold',
          { holdId: message.holdId, possibleDuplicate: context.previousOutcomeUnknown },
          context.signal,
        );
        return { kind: 'accepted', receipt };
      } catch (error) {
        return { kind: 'failed', reason: (error as Error).message, outcomeUnknown: true };
      }
    },
  };
}

/** (c) leasehold's two lanes, as `leasehold start` runs them, in one process. */
export async function runLeasehold(target: ChildTarget): Promise<void> {
  const { pool, schema } = target;
  const expiry = new ExpiryWorker({ pool, schema, intervalMs: 200, logger: silentLogger });
  const delivery = new DeliveryWorker({
    pool,
    schema,
    gateway: sinkGateway(target.sinkUrl),
    batchSize: 8,
    concurrency: 8,
    leaseMs: LEASE_MS,
    sendTimeoutMs: 1000,
    pollIntervalMs: 200,
    logger: silentLogger,
  });
  const listener = new Listener(target.databaseUrl, intentsChannel(schema), () => delivery.wake(), silentLogger);
  listener.start();
  expiry.start();
  delivery.start();
}
