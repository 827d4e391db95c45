import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config.js';
import { createHold } from '../src/holds/holds.js';
import { ExpiryWorker } from '../src/holds/expiry-worker.js';
import { silentLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import { holdTimeline } from '../src/read/timeline.js';
import { buildApp } from '../src/server/app.js';
import type { Benchmark, BenchResult } from './common.js';
import { median, round } from './common.js';

/**
 * What the HTTP contract costs a request: every route checks its input and
 * serializes its answer through its zod schemas (server/validation.ts).
 * The real app (token check, validation, closed answers) against a bare
 * Fastify app running the same work with neither schemas nor token, both
 * through `app.inject` on one schema, alternated round by round so load
 * drifts hit both:
 *
 * - `GET /v1/holds/{id}`: the largest answer (a hold's timeline, with its
 *   expiry email, message and attempt);
 * - `POST /v1/holds`: a create with a body to validate and a Hold to answer.
 *
 * Reports requests/s of each and the ratio real/bare (1.0: free).
 */
const ROUNDS = Number(process.env.BENCH_API_ROUNDS ?? 7);
const PER_ROUND = Number(process.env.BENCH_API_PER_ROUND ?? 300);
const TOKEN = 'bench-token-0123456789abcdef';
const HOLDS = 50;

async function rate(send: (i: number) => Promise<{ statusCode: number }>, expected: number, offset: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < PER_ROUND; i++) {
    const { statusCode } = await send(offset + i);
    if (statusCode !== expected) throw new Error(`answered ${statusCode}, expected ${expected}`);
  }
  return PER_ROUND / ((performance.now() - started) / 1000);
}

export const apiContract: Benchmark = {
  name: 'api-contract',
  description: `GET /v1/holds/{id} and POST /v1/holds through the app with its route schemas vs a bare Fastify app doing the same work, ${ROUNDS} x ${PER_ROUND} requests each`,
  async run(db): Promise<BenchResult> {
    const s = await db.freshSchema('api_contract', 4);
    const real = buildApp({ pool: s.pool, schema: s.schema, config: loadConfig({}), logger: silentLogger, metrics: createMetrics(), apiToken: TOKEN });
    const bare: FastifyInstance = Fastify({ logger: false });
    bare.get<{ Params: { id: string } }>('/v1/holds/:id', async (request) => holdTimeline(s.pool, s.schema, request.params.id));
    bare.post('/v1/holds', async (request, reply) => {
      const { hold, created } = await createHold(s.pool, request.body as never, { schema: s.schema });
      return reply.code(created ? 201 : 200).send(hold);
    });
    try {
      await Promise.all([real.ready(), bare.ready()]);
      // Expired holds, so each timeline carries an intent (its message and attempts come as the lane leaves them).
      const past = new Date(Date.now() - 60_000);
      for (let i = 0; i < HOLDS; i++) {
        await createHold(s.pool, { id: `t-${i}`, customerEmail: `t${i}@example.com`, expiresAt: new Date(past.getTime() + 1000) }, { schema: s.schema, clock: { now: () => past } });
      }
      await new ExpiryWorker({ pool: s.pool, schema: s.schema }).runOnce();
      const headers = { authorization: `Bearer ${TOKEN}` };
      const json = { ...headers, 'content-type': 'application/json' };
      const get = (app: FastifyInstance) => (i: number) => app.inject({ method: 'GET', url: `/v1/holds/t-${i % HOLDS}`, headers });
      const post = (app: FastifyInstance, prefix: string) => (i: number) =>
        app.inject({ method: 'POST', url: '/v1/holds', headers: json, payload: JSON.stringify({ id: `${prefix}-${i}`, customerEmail: 'c@example.com', ttlSeconds: 600, metadata: { seat: i } }) });

      const runs = { getReal: [] as number[], getBare: [] as number[], postReal: [] as number[], postBare: [] as number[] };
      // One warm-up round each, not counted.
      await rate(get(real), 200, 0);
      await rate(get(bare), 200, 0);
      for (let round = 0; round < ROUNDS; round++) {
        const offset = (round + 1) * PER_ROUND;
        // Alternate which goes first, so neither always follows the other.
        const pair = round % 2 === 0 ? (['real', 'bare'] as const) : (['bare', 'real'] as const);
        for (const which of pair) {
          const app = which === 'real' ? real : bare;
          runs[which === 'real' ? 'getReal' : 'getBare'].push(await rate(get(app), 200, offset));
          runs[which === 'real' ? 'postReal' : 'postBare'].push(await rate(post(app, which), 201, offset));
        }
      }
      const m = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)])) as Record<keyof typeof runs, number>;
      return {
        figures: [
          { name: 'GET /v1/holds/{id} with the contract', value: round(m.getReal, 0), unit: 'req/s' },
          { name: 'GET /v1/holds/{id} bare', value: round(m.getBare, 0), unit: 'req/s' },
          { name: 'GET ratio contract/bare', value: round(m.getReal / m.getBare, 2), unit: 'x' },
          { name: 'POST /v1/holds with the contract', value: round(m.postReal, 0), unit: 'req/s' },
          { name: 'POST /v1/holds bare', value: round(m.postBare, 0), unit: 'req/s' },
          { name: 'POST ratio contract/bare', value: round(m.postReal / m.postBare, 2), unit: 'x' },
        ],
        details: { rounds: ROUNDS, perRound: PER_ROUND, runs },
      };
    } finally {
      await real.close();
      await bare.close();
      await s.drop();
    }
  },
};
