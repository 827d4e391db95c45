import { ConfigError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { scopeVersion } from '../observability/tracing.js';
import { importOptional } from './optional-package.js';

/**
 * The OpenTelemetry SDK for `leasehold start` (and the single-lane
 * commands), configured by the standard OTEL_* variables and loaded only
 * when they ask for an export: the library itself depends on
 * @opentelemetry/api alone (observability/tracing.ts), and the SDK, the
 * context manager and the OTLP exporters are optional dependencies.
 *
 * Exports when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT is set and OTEL_TRACES_EXPORTER is not
 * `none` (nor OTEL_SDK_DISABLED=true); otherwise nothing is loaded and
 * every span stays the API's no-op. OTEL_EXPORTER_OTLP_PROTOCOL (or its
 * _TRACES_ form) picks `http/protobuf` (the default, as the specification
 * says) or `http/json`. The exporter and the batch processor read the rest
 * of their standard variables themselves (OTEL_EXPORTER_OTLP_HEADERS,
 * _TIMEOUT, OTEL_BSP_*), the sampler OTEL_TRACES_SAMPLER(_ARG), the
 * resource OTEL_RESOURCE_ATTRIBUTES; OTEL_SERVICE_NAME defaults to `leasehold`.
 */

export type OtlpProtocol = 'http/json' | 'http/protobuf';

export interface TracingSettings {
  /** The traces URL (…/v1/traces). */
  url: string;
  protocol: OtlpProtocol;
  serviceName: string;
}

export interface Tracing {
  settings: TracingSettings;
  /** Export what is buffered, then stop (after the lanes have drained). Idempotent. */
  shutdown(): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

const set = (value: string | undefined): string | undefined => (value !== undefined && value.trim() !== '' ? value.trim() : undefined);

/** What the OTEL_* variables ask for: undefined for no export at all. */
export function tracingFromEnv(env: Env): TracingSettings | undefined {
  if (set(env['OTEL_SDK_DISABLED'])?.toLowerCase() === 'true') return undefined;
  const exporters = (set(env['OTEL_TRACES_EXPORTER']) ?? 'otlp').split(',').map((e) => e.trim().toLowerCase());
  if (exporters.includes('none')) return undefined;
  const unknown = exporters.find((e) => e !== 'otlp');
  if (unknown !== undefined) throw new ConfigError('OTEL_TRACES_EXPORTER', `leasehold exports traces with otlp (or none), not ${JSON.stringify(unknown)}`);
  const traces = set(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  const base = set(env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  if (traces === undefined && base === undefined) return undefined;
  // The signal's own endpoint is used as given; the base one gets the signal's path (the OTLP exporter specification).
  const url = traces ?? `${base!.replace(/\/+$/, '')}/v1/traces`;
  try {
    new URL(url);
  } catch {
    throw new ConfigError(traces ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT', `must be a URL (http://collector:4318), got ${JSON.stringify(traces ?? base)}`);
  }
  const variable = set(env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = set(env[variable]) ?? 'http/protobuf';
  if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
    throw new ConfigError(variable, `leasehold exports over http/protobuf or http/json, not ${JSON.stringify(protocol)}`);
  }
  return { url, protocol, serviceName: set(env['OTEL_SERVICE_NAME']) ?? 'leasehold' };
}

/**
 * Load and register the SDK for `settings`: a tracer provider with a batch
 * span processor and the OTLP/HTTP exporter of the protocol, and the
 * AsyncLocalStorage context manager (so the span a hold is created in is
 * the active one). A package not installed is a MissingPackageError naming
 * it (the CLI exits 2), before anything connects.
 */
export async function startTracing(settings: TracingSettings, logger: Logger): Promise<Tracing> {
  const needed = `OTEL_EXPORTER_OTLP_ENDPOINT (tracing)`;
  const api = await import('@opentelemetry/api');
  const sdk = await importOptional('@opentelemetry/sdk-trace-base', needed, () => import('@opentelemetry/sdk-trace-base'));
  const resources = await importOptional('@opentelemetry/resources', needed, () => import('@opentelemetry/resources'));
  const hooks = await importOptional('@opentelemetry/context-async-hooks', needed, () => import('@opentelemetry/context-async-hooks'));
  const exporter =
    settings.protocol === 'http/json'
      ? new (await importOptional('@opentelemetry/exporter-trace-otlp-http', needed, () => import('@opentelemetry/exporter-trace-otlp-http'))).OTLPTraceExporter({ url: settings.url })
      : new (await importOptional('@opentelemetry/exporter-trace-otlp-proto', needed, () => import('@opentelemetry/exporter-trace-otlp-proto'))).OTLPTraceExporter({ url: settings.url });
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'leasehold', 'service.version': scopeVersion() }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
    .merge(resources.resourceFromAttributes({ 'service.name': settings.serviceName }));
  const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: [new sdk.BatchSpanProcessor(exporter)] });
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  api.trace.setGlobalTracerProvider(provider);
  logger.info({ event: 'tracing.started', url: settings.url, protocol: settings.protocol, serviceName: settings.serviceName }, 'exporting traces (OTLP)');
  let stopped: Promise<void> | undefined;
  return {
    settings,
    shutdown: () =>
      (stopped ??= (async () => {
        try {
          await provider.shutdown();
        } catch (error) {
          // A collector that is down costs the last spans, never the drain.
          logger.warn({ event: 'tracing.flush_failed', error: (error as Error)?.message }, 'the last spans were not exported');
        } finally {
          api.trace.disable();
          api.context.disable();
        }
      })()),
  };
}
