import { LoopWorker, ServiceLoop, type TickResult } from '../runtime/loop.js';
import { silentLogger } from '../observability/logger.js';
import { Pruner, type PrunerOptions, type PruneRound } from './prune.js';

/**
 * The retention lane inside the service: the shared service loop running
 * one Pruner round per tick, again at once while batches come back full,
 * otherwise after the policy's interval. Any number may run (every batch
 * locks with SKIP LOCKED), so every `leasehold start` runs one.
 */
export class PruneWorker extends LoopWorker {
  protected readonly loop: ServiceLoop;
  readonly pruner: Pruner;

  constructor(options: PrunerOptions) {
    super();
    this.pruner = new Pruner(options);
    this.loop = new ServiceLoop({
      name: 'retention',
      intervalMs: options.policy.intervalMs,
      logger: options.logger ?? silentLogger,
      tick: () => this.tick(),
    });
  }

  /** One round (tests call this directly and move time by backdating rows). */
  runOnce(): Promise<PruneRound> {
    return this.pruner.runOnce();
  }

  private async tick(): Promise<TickResult> {
    const round = await this.pruner.runOnce();
    return { full: round.full };
  }
}
