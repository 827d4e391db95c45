import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as OtelApi from '@opentelemetry/api';

/**
 * OpenTelemetry traces through @opentelemetry/api alone: with no SDK
 * registered (a library user who does not trace, or `leasehold start`
 * without OTEL_EXPORTER_OTLP_ENDPOINT) every span is the API's no-op and
 * nothing here builds an attribute or a link (each helper asks
 * `span.isRecording()` first). The SDK and its exporter are loaded only
 * by runtime/tracing-sdk.ts, when configured.
 *
 * The thread through a hold's life is its W3C traceparent, stored on the
 * hold when it is created inside a span (support_reservations.traceparent,
 * migration 0026). The expire, lease, send, record and ingest spans that
 * touch a hold carry a link to that context: one hold can be followed from
 * the request that created it to its email's delivery, across processes
 * and minutes, without making a 20-minute trace of it.
 *
 * Spans carry ids, counts and outcomes, never an address, a subject or a body.
 */

// Loaded on first use, not when the library is imported (BENCHMARKS.md, import time).
const require = createRequire(import.meta.url);
let loaded: typeof OtelApi | undefined;
const otel = (): typeof OtelApi => (loaded ??= require('@opentelemetry/api') as typeof OtelApi);

/**
 * Whether anything has registered with @opentelemetry/api in this process
 * (a tracer provider or a context manager). The API keeps its registrations
 * on this global, shared by every copy of the API of major version 1; with
 * none, there is no active span to read and no span to record, and the
 * library does not even load the API.
 */
function registered(): boolean {
  const global = (globalThis as Record<symbol, { trace?: unknown; context?: unknown } | undefined>)[Symbol.for('opentelemetry.js.api.1')];
  return global !== undefined && (global.trace !== undefined || global.context !== undefined);
}

/** Attribute names: OpenTelemetry semantic conventions (stable database and HTTP, messaging), then leasehold's own. */
export const ATTR = {
  dbSystem: 'db.system.name',
  dbNamespace: 'db.namespace',
  dbCollection: 'db.collection.name',
  dbOperation: 'db.operation.name',
  dbQuerySummary: 'db.query.summary',
  messagingSystem: 'messaging.system',
  messagingOperationType: 'messaging.operation.type',
  messagingOperationName: 'messaging.operation.name',
  messagingDestination: 'messaging.destination.name',
  messagingBatchCount: 'messaging.batch.message_count',
  messagingMessageId: 'messaging.message.id',
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  holdId: 'leasehold.hold.id',
  intentId: 'leasehold.intent.id',
  /** On a span of several holds or intents (a batch): their ids, at most MAX_LINKS. */
  holdIds: 'leasehold.hold.ids',
  intentIds: 'leasehold.intent.ids',
  attempt: 'leasehold.attempt',
  account: 'leasehold.account',
  provider: 'leasehold.provider',
  outcome: 'leasehold.outcome',
  batchSize: 'leasehold.batch.size',
  eventKind: 'leasehold.event.kind',
} as const;

/** `db.system.name` of every statement; `messaging.system` of the outbox (no registered value fits a table). */
export const DB_SYSTEM = 'postgresql';
export const MESSAGING_SYSTEM = 'leasehold';

/** Most links (and ids) on one span: a batch of 1,000 stays a readable span. */
export const MAX_LINKS = 128;

/** W3C Trace Context, version 00: what support_reservations.traceparent's CHECK admits. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * A traceparent as W3C Trace Context defines version 00 (lower-case hex,
 * neither id all zeros), or undefined: a header that is not one is ignored,
 * as the specification says, never refused.
 */
export function validTraceparent(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TRACEPARENT.exec(value.trim());
  if (!m || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return undefined;
  return m[0];
}

/**
 * The traceparent of the span active now, or undefined when there is none.
 * Stored whether the span is sampled or not (the flags say which): a link
 * to an unsampled parent costs nothing and keeps the thread for a backend
 * that sampled the request by other means (tail sampling).
 */
export function activeTraceparent(): string | undefined {
  if (!registered()) return undefined;
  const api = otel();
  const context = api.trace.getActiveSpan()?.spanContext();
  if (!context || !api.isSpanContextValid(context)) return undefined;
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The span context a stored traceparent names (remote: it was made in another process, or minutes ago). */
function spanContextOf(traceparent: string | null | undefined): OtelApi.SpanContext | undefined {
  const valid = validTraceparent(traceparent);
  if (!valid) return undefined;
  const [, traceId, spanId, flags] = valid.split('-');
  return { traceId: traceId!, spanId: spanId!, traceFlags: parseInt(flags!, 16), isRemote: true };
}

/** What a link points to: a hold's stored traceparent, with the ids that say which hold (and intent) it is. */
export interface HoldTrace {
  traceparent: string | null | undefined;
  holdId: string;
  intentId?: string;
  attempt?: number;
}

export type Attributes = OtelApi.Attributes;
export type Span = OtelApi.Span;

export interface SpanSpec {
  kind?: 'internal' | 'client' | 'producer' | 'consumer';
  /** Known at the start (cheap, constant). */
  attributes?: Attributes;
  /** Built only when the span records. */
  lazy?: () => Attributes;
  /** The holds this span touches: a link to each stored context, built only when the span records. */
  holds?: () => Iterable<HoldTrace>;
  startTime?: Date;
}

/** One link per hold with a stored context (the first MAX_LINKS, each hold once). */
export function linksTo(holds: Iterable<HoldTrace>): OtelApi.Link[] {
  const links: OtelApi.Link[] = [];
  const seen = new Set<string>();
  for (const hold of holds) {
    if (links.length >= MAX_LINKS) break;
    const key = `${hold.holdId}\u0000${hold.intentId ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const context = spanContextOf(hold.traceparent);
    if (!context) continue;
    const attributes: Attributes = { [ATTR.holdId]: hold.holdId };
    if (hold.intentId !== undefined) attributes[ATTR.intentId] = hold.intentId;
    if (hold.attempt !== undefined) attributes[ATTR.attempt] = hold.attempt;
    links.push({ context, attributes });
  }
  return links;
}

/** At most MAX_LINKS distinct values, for a batch span's id lists. */
export function capped(values: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const v of values) {
    if (out.size >= MAX_LINKS) break;
    out.add(v);
  }
  return [...out];
}

/**
 * Run `fn` in a span named `name` (active for what `fn` calls), ended when
 * `fn` settles. A throw marks the span an error with the error's class as
 * `error.type`, never its message (a provider's message may quote an
 * address). With no SDK registered, `fn` runs alone.
 */
export async function inSpan<T>(name: string, spec: SpanSpec, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!registered()) return fn(undefined);
  const api = otel();
  const tracer = api.trace.getTracer('leasehold', scopeVersion());
  return tracer.startActiveSpan(
    name,
    { kind: spanKind(api, spec.kind), ...(spec.attributes ? { attributes: spec.attributes } : {}), ...(spec.startTime ? { startTime: spec.startTime } : {}) },
    async (span) => {
      if (span.isRecording()) {
        if (spec.lazy) span.setAttributes(spec.lazy());
        if (spec.holds) span.addLinks(linksTo(spec.holds()));
      }
      try {
        return await fn(span);
      } catch (error) {
        span.setStatus({ code: api.SpanStatusCode.ERROR });
        span.setAttribute(ATTR.errorType, (error as Error)?.name ?? 'Error');
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

function spanKind(api: typeof OtelApi, kind: SpanSpec['kind']): OtelApi.SpanKind {
  if (kind === 'client') return api.SpanKind.CLIENT;
  if (kind === 'producer') return api.SpanKind.PRODUCER;
  if (kind === 'consumer') return api.SpanKind.CONSUMER;
  return api.SpanKind.INTERNAL;
}

/** Set attributes on a span that records (built only then). */
export function annotate(span: Span | undefined, attributes: () => Attributes): void {
  if (span?.isRecording()) span.setAttributes(attributes());
}

/** Add links to a span that records (for what is known only inside it, e.g. what a lease returned). */
export function linkHolds(span: Span | undefined, holds: () => Iterable<HoldTrace>): void {
  if (span?.isRecording()) span.addLinks(linksTo(holds()));
}

/** The single outcome of several results, or `mixed`. */
export function outcomeOf(outcomes: Iterable<string>): string | undefined {
  let one: string | undefined;
  for (const o of outcomes) {
    if (one === undefined) one = o;
    else if (o !== one) return 'mixed';
  }
  return one;
}

let version: string | undefined;

/**
 * This leasehold's version for the instrumentation scope (from its
 * package.json, whether this runs from src/ or dist/src/). Read here, not
 * through runtime/version.ts: runtime/ imports observability/, never back.
 */
export function scopeVersion(): string {
  if (version !== undefined) return version;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && existsSync(path.join(dir, 'migrations'))) return (version = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version);
    dir = path.dirname(dir);
  }
  return (version = '0.0.0');
}
