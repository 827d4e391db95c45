import type { EmailGateway, EmailMessage, SendContext, SendResult } from '../../src/providers/gateway.js';

/**
 * A provider whose answers the test scripts, per intent or for all: the role
 * Oban's Inline engine plays in its tests. Records every call it received.
 */
export class ScriptedGateway implements EmailGateway {
  readonly name = 'scripted';
  readonly calls: Array<{ message: EmailMessage; context: Omit<SendContext, 'signal'> }> = [];
  private readonly answers = new Map<string, Array<SendResult | (() => Promise<SendResult>)>>();

  constructor(
    private readonly fallback: SendResult | (() => Promise<SendResult>) = { kind: 'accepted', receipt: 'r' },
    readonly idempotent = false,
  ) {}

  /** Answers for one intent, used in order; the last one repeats. */
  script(intentId: string, ...answers: Array<SendResult | (() => Promise<SendResult>)>): this {
    this.answers.set(intentId, answers);
    return this;
  }

  async send(message: EmailMessage, context: SendContext): Promise<SendResult> {
    this.calls.push({ message, context: { attempt: context.attempt, previousOutcomeUnknown: context.previousOutcomeUnknown } });
    const list = this.answers.get(message.intentId);
    const answer = list ? (list.length > 1 ? list.shift()! : list[0]!) : this.fallback;
    const result = typeof answer === 'function' ? await answer() : answer;
    return result.kind === 'accepted' ? { ...result, receipt: `${result.receipt}-${this.calls.length}` } : result;
  }
}
