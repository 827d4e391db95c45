import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { intentsChannel, Listener } from '../db/listener.js';
import { migrate } from '../db/migrate.js';
import { ident } from '../db/pool.js';
import { rateLimiterEnsure } from '../delivery/control.js';
import { DeliveryWorker } from '../delivery/worker.js';
import { ExpiryWorker } from '../holds/expiry-worker.js';
import { silentLogger } from '../observability/logger.js';
import { createMetrics } from '../observability/metrics.js';
import { SandboxGateway } from '../providers/sandbox.js';
import { startApiServer } from '../server/app.js';
import type { DrillPolicy, DrillPromises } from './criteria.js';

/**
 * A fresh leasehold for the drill, in this process: the API on a free
 * loopback port with a token made for the run, both lanes, and the sandbox
 * provider, in a schema of the drill's own (dropped and recreated, so the
 * drill starts from an empty outbox). The drill then drives it through the
 * API exactly as it drives a remote deployment.
 */

export interface EmbeddedDeploymentOptions {
  pool: pg.Pool;
  /** Connection string, for the LISTEN connection that wakes the delivery lane. */
  url: string;
  schema: string;
  promises: DrillPromises;
  policy: DrillPolicy;
  /** The expiry lane's longest sleep. */
  expiryIntervalMs?: number;
}

export interface EmbeddedDeployment {
  url: string;
  token: string;
  close(): Promise<void>;
}

export async function startEmbeddedDeployment(options: EmbeddedDeploymentOptions): Promise<EmbeddedDeployment> {
  const { pool, schema } = options;
  await pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
  await migrate(pool, schema);
  await rateLimiterEnsure(pool, schema, options.policy);
  const token = randomBytes(24).toString('base64url');
  const metrics = createMetrics();
  const server = await startApiServer({
    pool,
    schema,
    config: { ...options.promises, ratePerSecond: options.policy.perSecond, rateBurst: options.policy.burst },
    logger: silentLogger,
    metrics,
    apiToken: token,
    port: 0,
    host: '127.0.0.1',
  });
  const gateway = new SandboxGateway({ latencyMs: [5, 30] });
  const expiry = new ExpiryWorker({ pool, schema, intervalMs: options.expiryIntervalMs ?? 500, logger: silentLogger, metrics });
  const delivery = new DeliveryWorker({ pool, schema, gateway, concurrency: 8, initialRate: options.policy, logger: silentLogger, metrics });
  const listener = new Listener(options.url, intentsChannel(schema), () => delivery.wake(), silentLogger);
  listener.start();
  expiry.start();
  delivery.start();
  let closed: Promise<void> | undefined;
  return {
    url: server.url,
    token,
    close: () =>
      (closed ??= (async () => {
        await server.close();
        await expiry.stop();
        await listener.stop();
        await delivery.stop();
        await gateway.close?.();
      })()),
  };
}
