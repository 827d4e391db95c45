import { context, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { ingestEvents } from '../../src/events/ingest.js';
import { createHold, getHold } from '../../src/holds/holds.js';
import { ExpiryWorker } from '../../src/holds/expiry-worker.js';
import { silentLogger } from '../../src/observability/logger.js';
import { activeTraceparent, MAX_LINKS, validTraceparent } from '../../src/observability/tracing.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { ident } from '../../src/db/pool.js';
import { rateLimiterSet } from '../../src/tables/rate-limiter.js';
import { apiHarness, TOKEN, type ApiHarness } from '../helpers/server.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { ScriptedGateway } from '../helpers/scripted-gateway.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
const tracer = () => trace.getTracer('app');

let db: TestDatabase;
beforeAll(async () => {
  // Registered for this file only: the library sees it through @opentelemetry/api's globals.
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
  db = await testDatabase('tracing');
  await rateLimiterSet(db.pool, db.schema, { perSecond: 1_000_000, burst: 1_000_000 });
});
afterAll(async () => {
  await db.close();
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const traceparentOf = (span: Span) => {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-0${c.traceFlags}`;
};
const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name);
const linked = (span: ReadableSpan, traceparent: string) => span.links.some((l) => traceparentOfLink(l.context) === traceparent);
const traceparentOfLink = (c: { traceId: string; spanId: string; traceFlags: number }) => `00-${c.traceId}-${c.spanId}-0${c.traceFlags}`;
const storedTraceparent = async (id: string) =>
  (await db.pool.query<{ traceparent: string | null }>(`SELECT traceparent FROM ${ident(db.schema)}.support_reservations WHERE id = $1`, [id])).rows[0]?.traceparent;

describe('traceparent on a hold', () => {
  it('a hold created inside an active span stores that span as its W3C traceparent', async () => {
    let parent = '';
    await tracer().startActiveSpan('checkout', async (span) => {
      parent = traceparentOf(span);
      expect(activeTraceparent()).toBe(parent);
      await createHold(db.pool, { id: 'tp-active', customerEmail: 'ana@example.com', ttlSeconds: 600 }, { schema: db.schema });
      span.end();
    });
    expect(parent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(await storedTraceparent('tp-active')).toBe(parent);
  });

  it('outside any span the hold has none; a given traceparent wins, a bad one is ignored', async () => {
    await createHold(db.pool, { id: 'tp-none', customerEmail: 'ana@example.com', ttlSeconds: 600 }, { schema: db.schema });
    expect(await storedTraceparent('tp-none')).toBeNull();
    const given = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await createHold(db.pool, { id: 'tp-given', customerEmail: 'ana@example.com', ttlSeconds: 600 }, { schema: db.schema, traceparent: given });
    expect(await storedTraceparent('tp-given')).toBe(given);
    await createHold(db.pool, { id: 'tp-bad', customerEmail: 'ana@example.com', ttlSeconds: 600 }, { schema: db.schema, traceparent: 'garbage' });
    expect(await storedTraceparent('tp-bad')).toBeNull();
    // The retry of the same request is the same hold, whatever trace it arrives in.
    const retry = await createHold(db.pool, { id: 'tp-given', customerEmail: 'ana@example.com', ttlSeconds: 600 }, { schema: db.schema, traceparent: 'x' });
    expect(retry.created).toBe(false);
  });

  it('validTraceparent takes version 00 only, lower-case, with neither id all zeros', () => {
    expect(validTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')).toBeDefined();
    expect(validTraceparent('00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01')).toBeUndefined();
    expect(validTraceparent(`00-${'0'.repeat(32)}-b7ad6b7169203331-01`)).toBeUndefined();
    expect(validTraceparent(`00-0af7651916cd43dd8448eb211c80319c-${'0'.repeat(16)}-01`)).toBeUndefined();
    expect(validTraceparent('ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toBeUndefined();
    expect(validTraceparent(undefined)).toBeUndefined();
  });

  it('the database refuses a stored traceparent that is not W3C', async () => {
    await expect(
      db.pool.query(`UPDATE ${ident(db.schema)}.support_reservations SET traceparent = 'nope' WHERE id = 'tp-none'`),
    ).rejects.toThrow(/support_reservations_traceparent/);
  });
});

describe('POST /v1/holds with a traceparent header', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await apiHarness('tracing_api');
  });
  afterAll(() => api.close());
  const stored = async (id: string) =>
    (await api.db.pool.query<{ traceparent: string | null }>(`SELECT traceparent FROM ${ident(api.db.schema)}.support_reservations WHERE id = $1`, [id])).rows[0]
      ?.traceparent;

  it('stores a valid header, and ignores a bad one without an error', async () => {
    const header = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const good = await api.call('POST', '/v1/holds', { id: 'api-tp', customerEmail: 'bo@example.com', ttlSeconds: 600 }, { authorization: `Bearer ${TOKEN}`, traceparent: header });
    expect(good.statusCode).toBe(201);
    expect(await stored('api-tp')).toBe(header);
    const bad = await api.call('POST', '/v1/holds', { id: 'api-tp-bad', customerEmail: 'bo@example.com', ttlSeconds: 600 }, { authorization: `Bearer ${TOKEN}`, traceparent: '01-zz' });
    expect(bad.statusCode).toBe(201);
    expect(await stored('api-tp-bad')).toBeNull();
  });
});

describe('the lanes link their spans to the hold', () => {
  // A schema of its own: only this describe's holds fall due here.
  let lanes: TestDatabase;
  beforeAll(async () => {
    lanes = await testDatabase('tracing_lanes');
    await rateLimiterSet(lanes.pool, lanes.schema, { perSecond: 1_000_000, burst: 1_000_000 });
  });
  afterAll(() => lanes.close());

  it('expire, lease, send, record and ingest spans carry a link to the creating context, ids and outcomes, never an address or a body', async () => {
    const address = 'secret.person@example.com';
    const clock = new ManualClock('2030-01-01T00:00:00Z');
    let parent = '';
    await tracer().startActiveSpan('reserve', async (span) => {
      parent = traceparentOf(span);
      await createHold(lanes.pool, { id: 'life-1', customerEmail: address, ttlSeconds: 60, metadata: { note: 'body-marker' } }, { schema: lanes.schema, clock });
      span.end();
    });
    await createHold(lanes.pool, { id: 'life-2', customerEmail: 'other@example.com', ttlSeconds: 60 }, { schema: lanes.schema, clock });
    clock.advance(61_000);

    const expiry = new ExpiryWorker({ pool: lanes.pool, schema: lanes.schema, clock, logger: silentLogger });
    const run = await expiry.runOnce();
    expect(run.expired.map((h) => h.id).sort()).toEqual(['life-1', 'life-2']);
    const [expire] = spans('expire');
    expect(expire).toBeDefined();
    expect(linked(expire!, parent)).toBe(true);
    // life-2 has no stored context: no link for it.
    expect(expire!.links).toHaveLength(1);
    expect(expire!.links[0]!.attributes).toMatchObject({ 'leasehold.hold.id': 'life-1', 'leasehold.intent.id': 'reservation-expired:life-1' });
    expect(expire!.attributes).toMatchObject({
      'db.system.name': 'postgresql',
      'db.collection.name': 'support_reservations',
      'db.namespace': lanes.schema,
      'messaging.operation.type': 'create',
      'messaging.batch.message_count': 2,
    });
    expect(expire!.attributes['leasehold.hold.ids']).toEqual(expect.arrayContaining(['life-1', 'life-2']));

    const gateway = new ScriptedGateway();
    const delivery = new DeliveryWorker({ pool: lanes.pool, schema: lanes.schema, gateway, clock, logger: silentLogger, reclaimIntervalMs: 0, from: 'shop@leasehold.test' });
    const round = await delivery.runOnce();
    expect(round.leased).toBe(2);

    const [lease] = spans('lease');
    expect(lease && linked(lease, parent)).toBe(true);
    expect(lease!.attributes).toMatchObject({ 'messaging.operation.type': 'receive', 'messaging.batch.message_count': 2, 'db.collection.name': 'email_outbox' });
    expect(lease!.links.find((l) => l.attributes?.['leasehold.hold.id'] === 'life-1')?.attributes).toMatchObject({ 'leasehold.attempt': 1 });

    const sends = spans('send');
    expect(sends).toHaveLength(2);
    const send = sends.find((s) => s.attributes['leasehold.hold.id'] === 'life-1')!;
    expect(linked(send, parent)).toBe(true);
    expect(send.attributes).toMatchObject({
      'messaging.operation.type': 'send',
      'messaging.batch.message_count': 1,
      'leasehold.intent.id': 'reservation-expired:life-1',
      'leasehold.attempt': 1,
      'leasehold.account': 'default',
      'leasehold.outcome': 'accepted',
    });
    const [record] = spans('record');
    expect(record && linked(record, parent)).toBe(true);
    expect(record!.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.batch.message_count': 2, 'leasehold.outcome': ['accepted'] });

    const receipt = (await lanes.pool.query<{ receipt: string }>(`SELECT receipt FROM ${ident(lanes.schema)}.email_attempts WHERE intent_id = 'reservation-expired:life-1'`)).rows[0]!.receipt;
    await ingestEvents(lanes.pool, lanes.schema, [
      { provider: 'sandbox', providerEventId: 'ev-life-1', messageId: receipt, kind: 'delivered', bounceType: null, providerType: null, reason: null, occurredAt: new Date(), recipients: [address] },
    ]);
    const [ingest] = spans('ingest');
    expect(ingest && linked(ingest, parent)).toBe(true);
    expect(ingest!.attributes).toMatchObject({ 'leasehold.hold.id': 'life-1', 'leasehold.event.kind': 'delivered', 'leasehold.outcome': 'matched' });

    // Nothing anywhere in a span (attributes, links, events) names the recipient or the message.
    const message = gateway.calls[0]!.message;
    const everything = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, links: s.links.map((l) => l.attributes), events: s.events })),
    );
    expect(everything).not.toContain(address);
    expect(everything).not.toContain('other@example.com');
    expect(everything).not.toContain('body-marker');
    expect(everything).not.toContain(message.subject);
    expect(everything).not.toContain(message.text.slice(0, 40));
    await expect(getHold(lanes.pool, 'life-1', { schema: lanes.schema })).resolves.toMatchObject({ status: 'expired' });
  });

  it('a batch span links at most MAX_LINKS holds', async () => {
    const clock = new ManualClock('2031-01-01T00:00:00Z');
    await tracer().startActiveSpan('bulk', async (span) => {
      for (let i = 0; i < MAX_LINKS + 5; i++) {
        await createHold(lanes.pool, { id: `bulk-${i}`, customerEmail: 'ana@example.com', ttlSeconds: 60 }, { schema: lanes.schema, clock });
      }
      span.end();
    });
    clock.advance(61_000);
    await new ExpiryWorker({ pool: lanes.pool, schema: lanes.schema, clock, logger: silentLogger, batchSize: 500 }).runOnce();
    const [expire] = spans('expire');
    expect(expire!.attributes['messaging.batch.message_count']).toBe(MAX_LINKS + 5);
    expect(expire!.links).toHaveLength(MAX_LINKS);
    expect(expire!.attributes['leasehold.hold.ids']).toHaveLength(MAX_LINKS);
  });
});
