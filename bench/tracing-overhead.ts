import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ident } from '../src/db/pool.js';
import { DeliveryWorker } from '../src/delivery/worker.js';
import { silentLogger } from '../src/observability/logger.js';
import type { EmailGateway } from '../src/providers/gateway.js';
import { rateLimiterSet } from '../src/tables/rate-limiter.js';
import type { Benchmark, BenchResult } from './common.js';
import { round, sleep } from './common.js';

/**
 * `npm run bench -- tracing-overhead` (opt-in): what OpenTelemetry costs
 * the delivery lane. One DeliveryWorker at the defaults sends a backlog
 * through a provider that accepts at once, paced by the shared limiter at
 * 1,000 emails/s, for RUN_S seconds: first with no SDK registered (every
 * span the API's no-op), then with the SDK registered as `leasehold start`
 * registers it (a tracer provider, a BatchSpanProcessor, the
 * AsyncLocalStorage context manager) and an exporter that drops what it is
 * given, so the figure is leasehold's span work (a send span per email,
 * a lease and a record span per round, each with its links), not a
 * collector's network. Every hold carries a traceparent, so every span
 * has its links.
 *
 * Reports sends/s and this process's CPU (user + system) per send, both
 * ways. PostgreSQL's CPU is not counted (it is another process).
 */
const PER_SECOND = 1000;
const RUN_S = 10;
const BACKLOG = PER_SECOND * (RUN_S + 3);

const accepting: EmailGateway = {
  name: 'accepting',
  idempotent: true,
  send: async (message) => ({ kind: 'accepted', receipt: `r-${message.intentId}` }),
};

/** Takes the spans and drops them: the SDK's work is measured, not an exporter's. */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

interface Phase {
  sendsPerSecond: number;
  cpuUsPerSend: number;
  spans: number;
}

export const tracingOverhead: Benchmark = {
  name: 'tracing-overhead',
  description: `delivery at ${PER_SECOND}/s for ${RUN_S} s with tracing off, then on (SDK, batch processor, dropping exporter): sends/s and CPU per send`,
  optIn: true,
  async run(db): Promise<BenchResult> {
    const phase = async (traced: boolean): Promise<Phase> => {
      const schema = await db.freshSchema(traced ? 'tracing_on' : 'tracing_off');
      const s = ident(schema.schema);
      const exporter = new DroppingExporter();
      const provider = traced ? new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }) : undefined;
      try {
        await rateLimiterSet(schema.pool, schema.schema, { perSecond: PER_SECOND, burst: PER_SECOND });
        await schema.pool.query(
          `WITH h AS (
             INSERT INTO ${s}.support_reservations (id, customer_email, expires_at, status, expired_at, request_hash, traceparent)
             SELECT 'h-' || i, 'c@example.com', now(), 'expired', now(), 'x',
                    '00-' || md5('t' || i) || '-' || left(md5('s' || i), 16) || '-01'
               FROM generate_series(1, $1) i RETURNING id, expires_at)
           INSERT INTO ${s}.email_outbox (id, reservation_id, recipient, template, state, available_at, created_at)
           SELECT 'reservation-expired:' || h.id, h.id, 'c@example.com', 'reservation-expired', 'pending', h.expires_at, h.expires_at FROM h`,
          [BACKLOG],
        );
        await schema.pool.query(`ANALYZE ${s}.email_outbox`);
        if (provider) {
          context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
          trace.setGlobalTracerProvider(provider);
        }
        const worker = new DeliveryWorker({ pool: schema.pool, schema: schema.schema, gateway: accepting, from: 'Bench <bench@example.com>', logger: silentLogger });
        const sent = async () =>
          (await schema.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.email_outbox WHERE state = 'sent'`)).rows[0]!.n;
        worker.start();
        // The first second spends the burst: measure the steady rate after it.
        await sleep(1500);
        const startSent = await sent();
        const cpu = process.cpuUsage();
        const started = process.hrtime.bigint();
        await sleep(RUN_S * 1000);
        const used = process.cpuUsage(cpu);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const count = (await sent()) - startSent;
        await worker.stop();
        await provider?.forceFlush();
        return { sendsPerSecond: count / seconds, cpuUsPerSend: (used.user + used.system) / count, spans: exporter.spans };
      } finally {
        if (provider) {
          await provider.shutdown();
          trace.disable();
          context.disable();
        }
        await schema.drop();
      }
    };
    const off = await phase(false);
    const on = await phase(true);
    return {
      figures: [
        { name: 'sends/s, tracing off', value: round(off.sendsPerSecond, 0), unit: 'emails/s', target: `>= ${PER_SECOND * 0.95}` },
        { name: 'sends/s, tracing on', value: round(on.sendsPerSecond, 0), unit: 'emails/s', target: `>= ${PER_SECOND * 0.95}` },
        { name: 'CPU per send, tracing off', value: round(off.cpuUsPerSend, 0), unit: 'us' },
        { name: 'CPU per send, tracing on', value: round(on.cpuUsPerSend, 0), unit: 'us' },
        { name: 'CPU overhead of tracing', value: round(((on.cpuUsPerSend - off.cpuUsPerSend) / off.cpuUsPerSend) * 100, 1), unit: '%' },
      ],
      details: { perSecond: PER_SECOND, runSeconds: RUN_S, backlog: BACKLOG, spansExported: on.spans },
    };
  },
};
