import type { Logger } from '../observability/logger.js';

/**
 * Two-stage shutdown: the first SIGTERM/SIGINT runs `drain` (stop taking
 * work, finish what is in flight); a second signal, or `forceAfterMs`
 * passing, exits at once. Nothing is lost by forcing: un-committed expiry
 * work rolls back and leased intents become eligible again when the lease
 * expires. The state lives in this closure, not in module globals.
 */
export function onShutdownSignals(
  drain: () => Promise<void>,
  logger: Logger,
  options: { forceAfterMs?: number; exit?: (code: number) => void } = {},
): () => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let draining = false;

  const handler = (signal: NodeJS.Signals) => {
    if (draining) {
      logger.warn({ event: 'shutdown.forced', signal }, 'second signal: exiting now');
      exit(1);
      return;
    }
    draining = true;
    logger.info({ event: 'shutdown.draining', signal }, 'draining; send the signal again to force');
    const force = setTimeout(() => {
      logger.warn({ event: 'shutdown.forced', reason: 'timeout' }, 'drain timed out: exiting now');
      exit(1);
    }, options.forceAfterMs ?? 30_000);
    force.unref();
    drain().then(
      () => {
        clearTimeout(force);
        logger.info({ event: 'shutdown.done' }, 'stopped cleanly');
        exit(0);
      },
      (error: unknown) => {
        clearTimeout(force);
        logger.error({ event: 'shutdown.failed', err: error }, 'drain failed');
        exit(1);
      },
    );
  };

  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}
