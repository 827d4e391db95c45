import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { createMetrics, type Metrics } from '../../src/observability/metrics.js';
import { buildApp, type ApiOptions } from '../../src/server/app.js';
import { testDatabase, type TestDatabase } from './database.js';
import { ContractValidator, injected } from './contract.js';

export const TOKEN = 'test-token-0123456789abcdef';

/** Collects every log line written, for assertions on events and on what is never logged. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
  events(): Array<Record<string, unknown>> {
    return this.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

export interface ApiHarness {
  db: TestDatabase;
  app: FastifyInstance;
  logs: LogCapture;
  logger: Logger;
  metrics: Metrics;
  /** Authenticated JSON request; `headers` override the defaults. */
  call(method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function apiHarness(label: string, env: Record<string, string> = {}, extra: Partial<ApiOptions> = {}): Promise<ApiHarness> {
  const db = await testDatabase(label);
  const logs = new LogCapture();
  const logger = createLogger({ level: 'debug', destination: logs });
  const metrics = createMetrics();
  // Refusal tests send many wrong tokens from one address: no lockout unless a test asks for one.
  const config = loadConfig({ LEASEHOLD_AUTH_FAILURES_PER_MINUTE: '100000', ...env });
  const app = buildApp({ pool: db.pool, schema: db.schema, config, logger, metrics, apiToken: TOKEN, ...extra });
  await app.ready();
  checkContract(app);
  return {
    db,
    app,
    logs,
    logger,
    metrics,
    call(method, url, body, headers = {}) {
      return app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { payload: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      });
    },
    async close() {
      await app.close();
      await db.close();
    },
  };
}

/**
 * Every `app.inject(options)` from here on is checked against the OpenAPI
 * document the app serves (helpers/contract.ts): a request or answer that
 * does not keep it fails the call, so the test that made it fails.
 */
export function checkContract(app: FastifyInstance): void {
  const contract = new ContractValidator((app as unknown as { swagger(): ConstructorParameters<typeof ContractValidator>[0] }).swagger());
  const inject = app.inject.bind(app) as (options: InjectOptions | string) => Promise<LightMyRequestResponse>;
  (app as unknown as { inject: typeof inject }).inject = async (options) => {
    const response = await inject(options);
    const problems = contract.check(injected(options), response);
    if (problems.length > 0) throw new Error(`the API broke its OpenAPI document:\n- ${problems.join('\n- ')}`);
    return response;
  };
}
