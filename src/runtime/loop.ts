import { LaneEvents } from './events.js';
import type { Logger } from '../observability/logger.js';
import { isConnectionError } from '../errors.js';

export interface TickResult {
  /** The batch came back full: run again at once. */
  full: boolean;
  /** When not full, how long until there is likely work (capped by the interval). */
  nextInMs?: number;
}

export interface ServiceLoopOptions {
  name: string;
  intervalMs: number;
  tick: () => Promise<TickResult>;
  logger: Logger;
  /** Longest back-off after consecutive errors (connection loss). */
  maxBackoffMs?: number;
  /**
   * A tick still unsettled after this long is given up on: logged as
   * `<name>.tick_timeout`, counted as an error (back-off), and the loop goes
   * on without it. Every wait inside a tick is bounded already (query,
   * connect and send timeouts); this is the last line, so no await that
   * somehow never settles can stop a lane. Default: none.
   */
  tickTimeoutMs?: number;
}

/** A tick given up on by the loop's watchdog (ServiceLoopOptions.tickTimeoutMs). */
export class TickTimeoutError extends Error {
  constructor(name: string, ms: number) {
    super(`${name} tick did not finish within ${ms} ms; the loop goes on without it`);
    this.name = 'TickTimeoutError';
  }
}

/**
 * The one service loop both lanes run: tick at once, loop while batches come
 * back full, otherwise sleep (the interval, or less when work is due sooner),
 * back off with jitter on errors so a database restart is ridden out rather
 * than crashing the process. `stop()` is idempotent and resolves after the
 * in-flight tick finishes; `wake()` cuts a sleep short.
 */
export class ServiceLoop {
  private running = false;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private sleepTimer: NodeJS.Timeout | undefined;
  private wakeSleep: (() => void) | undefined;
  private consecutiveErrors = 0;
  private wakePending = false;
  private lastRoundAt: number | undefined;
  private startedAt: number | undefined;

  constructor(private readonly options: ServiceLoopOptions) {}

  /**
   * Seconds since this loop last finished a round (with work, idle, or an
   * error: a failing database is the health check's other reason), or since
   * it started; undefined when not running. A loop that keeps sleeping
   * between rounds stays near its interval; one whose round never ends grows.
   */
  lastRoundAgeSeconds(now = Date.now()): number | undefined {
    if (!this.running || this.startedAt === undefined) return undefined;
    return (now - (this.lastRoundAt ?? this.startedAt)) / 1000;
  }

  get intervalMs(): number {
    return this.options.intervalMs;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = false;
    this.startedAt = Date.now();
    this.lastRoundAt = undefined;
    this.loopDone = this.run();
  }

  /**
   * Cut the current sleep short; during a tick, the next sleep is skipped
   * instead, so a wake-up that arrives while a tick runs is never lost.
   */
  wake(): void {
    if (this.wakeSleep) this.wakeSleep();
    else this.wakePending = true;
  }

  /** Sleeping between ticks (not in one). */
  get isSleeping(): boolean {
    return this.wakeSleep !== undefined;
  }

  /** Resolves once the current tick (if any) has finished. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loopDone;
    this.running = false;
  }

  get isRunning(): boolean {
    return this.running && !this.stopping;
  }

  private async run(): Promise<void> {
    const { logger, name, intervalMs } = this.options;
    while (!this.stopping) {
      let sleepMs: number;
      // A wake-up before this tick is answered by it; one during it, by the next.
      this.wakePending = false;
      try {
        const result = await this.guardedTick();
        this.lastRoundAt = Date.now();
        if (this.consecutiveErrors > 0) logger.info({ event: `${name}.recovered` }, `${name} recovered`);
        this.consecutiveErrors = 0;
        if (result.full) continue;
        sleepMs = Math.max(0, Math.min(intervalMs, result.nextInMs ?? intervalMs));
      } catch (error) {
        this.lastRoundAt = Date.now();
        this.consecutiveErrors += 1;
        const cap = this.options.maxBackoffMs ?? 10_000;
        const base = Math.min(cap, 100 * 2 ** Math.min(this.consecutiveErrors, 10));
        sleepMs = base / 2 + Math.random() * (base / 2);
        // Back off even if woken meanwhile: new work does not mend a failing database.
        this.wakePending = false;
        logger.error(
          {
            event: error instanceof TickTimeoutError ? `${name}.tick_timeout` : `${name}.error`,
            err: error,
            connectionLost: isConnectionError(error),
            consecutiveErrors: this.consecutiveErrors,
            retryInMs: Math.round(sleepMs),
          },
          `${name} tick failed; retrying`,
        );
      }
      await this.sleep(sleepMs);
    }
  }

  /** The tick, given up on after tickTimeoutMs (its late result or error is logged, never lost silently). */
  private guardedTick(): Promise<TickResult> {
    const { tickTimeoutMs, name, logger } = this.options;
    const tick = this.options.tick();
    if (!tickTimeoutMs) return tick;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const watchdog = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new TickTimeoutError(name, tickTimeoutMs));
      }, tickTimeoutMs);
    });
    tick.then(
      () => {
        if (timedOut) logger.warn({ event: `${name}.late_tick_finished` }, `${name} tick given up on has finished`);
      },
      (error: unknown) => {
        if (timedOut) logger.warn({ event: `${name}.late_tick_failed`, err: error }, `${name} tick given up on has failed`);
      },
    );
    return Promise.race([tick, watchdog]).finally(() => clearTimeout(timer));
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopping || ms <= 0 || this.wakePending) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(this.sleepTimer);
        this.sleepTimer = undefined;
        this.wakeSleep = undefined;
        resolve();
      };
      this.wakeSleep = done;
      this.sleepTimer = setTimeout(done, ms);
    });
  }
}

/**
 * A worker driven by ServiceLoops (one, or several running rounds side by
 * side): both lanes start, stop and wake alike.
 */
export abstract class LoopWorker<Events extends { [K in keyof Events]: object } = Record<never, object>> {
  protected abstract readonly loop: ServiceLoop;
  /** Every loop of this worker; `loop` alone unless a lane runs more. */
  protected get loops(): readonly ServiceLoop[] {
    return [this.loop];
  }
  /** Loops that run beside the lane's own (started and stopped with it, never woken by wake()). */
  protected get sideLoops(): readonly ServiceLoop[] {
    return [];
  }

  /**
   * Seconds since the lane last finished a round: its freshest loop's (the
   * lane works while any of its loops does); undefined when not running.
   */
  lastRoundAgeSeconds(now = Date.now()): number | undefined {
    const ages = this.loops.map((loop) => loop.lastRoundAgeSeconds(now)).filter((age): age is number => age !== undefined);
    return ages.length === 0 ? undefined : Math.min(...ages);
  }

  /** The lane's longest sleep between rounds (its first loop's interval). */
  get roundIntervalMs(): number {
    return this.loop.intervalMs;
  }

  /** In-process events, emitted only after what they report is committed; listener failures go to the lane's logger. */
  protected readonly events = new LaneEvents<Events>(() => this.loop.logger);

  /** Listen for a lane event (`worker.on('expired', ...)`); a listener that throws is logged, never breaks the lane. */
  on<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): this {
    this.events.on(event, listener);
    return this;
  }

  once<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): this {
    this.events.once(event, listener);
    return this;
  }

  off<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): this {
    this.events.off(event, listener);
    return this;
  }

  private stopRequested = false;

  start(): void {
    this.stopRequested = false;
    for (const loop of [...this.loops, ...this.sideLoops]) loop.start();
  }

  /** Resolves once the ticks in flight have finished (their transactions committed, their sends recorded). */
  async stop(): Promise<void> {
    this.stopRequested = true;
    await Promise.all([...this.loops, ...this.sideLoops].map((loop) => loop.stop()));
  }

  /** stop() was called (and start() not since): work not yet begun should not begin. */
  protected get stopping(): boolean {
    return this.stopRequested;
  }

  /**
   * New work is known to be waiting: one loop answers, a sleeping one if
   * there is one (its sleep is cut short), else the first after its tick.
   */
  wake(): void {
    (this.loops.find((loop) => loop.isSleeping) ?? this.loop).wake();
  }

  /** Bring in one more loop, if one is asleep (a lane with a backlog). */
  protected wakeSleeping(): void {
    this.loops.find((loop) => loop.isSleeping)?.wake();
  }
}
