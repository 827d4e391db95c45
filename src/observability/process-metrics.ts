import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

/**
 * Node process metrics (prom-client's default set: process_cpu_seconds_total,
 * process_resident_memory_bytes, nodejs_eventloop_lag_seconds, nodejs_gc_*,
 * nodejs_heap_*, ...) in a registry of their own. They describe the process,
 * so there is one set per process, created when the first API is built: an
 * event-loop monitor and a GC observer, which merely importing leasehold
 * never starts (invariant 13). Unprefixed, so standard Node dashboards work.
 */
export function processMetricsRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}
