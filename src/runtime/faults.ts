/**
 * The one fault-injection seam. Workers call `await faults.at('<point>', ctx)`
 * at the moments a crash matters; production passes nothing and every call
 * is a no-op. Crash tests pass a hook that, at the chosen point, tells the
 * parent test process and then waits to be SIGKILLed, so the crash is a real
 * process death with a real open transaction or an unrecorded send, never a
 * thrown exception that cleanup code could catch.
 *
 * Points:
 * - `expiry.locked`     rows locked and updated, intents inserted, not committed
 * - `expiry.committed`  the expiry transaction committed
 * - `delivery.leased`   intents leased, nothing sent yet
 * - `delivery.batch`    a batch recorded (its members in order), its request not yet made
 * - `delivery.accepted` the provider accepted a message, receipt not saved
 */
import { ValidationError } from '../errors.js';

export type FaultPoint = 'expiry.locked' | 'expiry.committed' | 'delivery.leased' | 'delivery.batch' | 'delivery.accepted';

export type FaultHook = (point: FaultPoint, context: Record<string, unknown>) => void | Promise<void>;

export class Faults {
  constructor(private readonly hook?: FaultHook) {
    if (hook !== undefined && typeof hook !== 'function') throw new ValidationError('hook', 'must be a function (point, context) => void | Promise<void>');
  }

  async at(point: FaultPoint, context: Record<string, unknown> = {}): Promise<void> {
    if (this.hook) await this.hook(point, context);
  }
}

export const noFaults = new Faults();
