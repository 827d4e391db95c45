import { EventEmitter } from 'node:events';
import type { Logger } from '../observability/logger.js';

/**
 * A typed event emitter over node:events for the lanes' in-process events
 * (`expired`, `sent`, `rejected`, `dead`). Events are news about committed
 * rows, so a listener's failure is the listener's: a throw or a rejected
 * promise is logged (`lane.listener_failed`) and the lane carries on.
 */
export class LaneEvents<Events extends { [K in keyof Events]: object }> {
  private readonly emitter = new EventEmitter();

  constructor(private readonly logger: () => Logger) {
    // Any number of application listeners; no "possible leak" warning at 11.
    this.emitter.setMaxListeners(0);
  }

  on<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): void {
    this.emitter.on(event, listener);
  }

  once<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): void {
    this.emitter.once(event, listener);
  }

  off<K extends keyof Events & string>(event: K, listener: (payload: Events[K]) => unknown): void {
    this.emitter.off(event, listener);
  }

  listenerCount(event: keyof Events & string): number {
    return this.emitter.listenerCount(event);
  }

  emit<K extends keyof Events & string>(event: K, payload: Events[K]): void {
    // rawListeners: a `once` wrapper removes itself when called.
    for (const listener of this.emitter.rawListeners(event) as Array<(payload: Events[K]) => unknown>) {
      try {
        const result = listener(payload);
        if (result instanceof Promise) result.catch((error: unknown) => this.failed(event, error));
      } catch (error) {
        this.failed(event, error);
      }
    }
  }

  /** Emit a list of events in order, e.g. one per intent a delivery round finished. */
  emitAll(events: Array<{ [K in keyof Events & string]: [K, Events[K]] }[keyof Events & string]>): void {
    for (const [event, payload] of events) this.emit(event, payload as Events[typeof event]);
  }

  private failed(event: string, error: unknown): void {
    this.logger().error({ event: 'lane.listener_failed', laneEvent: event, err: error }, `a listener of '${event}' failed; the lane carries on`);
  }
}
