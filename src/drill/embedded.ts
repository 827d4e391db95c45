import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../config.js';
import { migrate } from '../db/migrate.js';
import { ident } from '../db/pool.js';
import { silentLogger } from '../observability/logger.js';
import { SandboxGateway } from '../providers/sandbox.js';
import { prepareService, startService } from '../service.js';
import type { DrillPolicy, DrillPromises } from './criteria.js';

/**
 * A fresh leasehold for the drill, in this process: the API on a free
 * loopback port with a token made for the run, both lanes, and the sandbox
 * provider, in a schema of the drill's own (dropped and recreated, so the
 * drill starts from an empty outbox), built by the composition root like
 * `leasehold start`. The drill then drives it through the API exactly as it
 * drives a remote deployment.
 */

export interface EmbeddedDeploymentOptions {
  /** The operator's configuration; the drill's own schema, port, token, promises and policy replace its values. */
  config: Config;
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
  const token = randomBytes(24).toString('base64url');
  const config: Config = {
    ...options.config,
    schema,
    port: 0,
    host: '127.0.0.1',
    apiToken: token,
    ...options.promises,
    ratePerSecond: options.policy.perSecond,
    rateBurst: options.policy.burst,
    expiryIntervalMs: options.expiryIntervalMs ?? 500,
    deliveryConcurrency: 8,
  };
  const prepared = await prepareService(config, { expiry: true, delivery: true, api: true }, { gateway: new SandboxGateway({ latencyMs: [5, 30] }) });
  const service = await startService(prepared, { pool, schema, logger: silentLogger }, { databaseUrl: options.url });
  return { url: service.api!.url, token, close: () => service.stop() };
}
