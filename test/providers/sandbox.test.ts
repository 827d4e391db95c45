import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { KEEP_ACCEPTED, SandboxGateway } from '../../src/providers/sandbox.js';
import { context, message } from '../helpers/message.js';

describe('the sandbox provider in a long-running service', () => {
  it('keeps only the most recent acceptances in memory, and counts them all', async () => {
    const gateway = new SandboxGateway();
    const sent = KEEP_ACCEPTED + 1;
    const m = message('keep');
    for (let i = 0; i < sent; i++) await gateway.send({ ...m, intentId: `reservation-expired:keep-${i}` }, context());
    expect(gateway.acceptedCount).toBe(sent);
    expect(gateway.accepted.length).toBeLessThanOrEqual(KEEP_ACCEPTED);
    // The newest stays.
    expect(gateway.accepted.at(-1)!.intentId).toBe(`reservation-expired:keep-${sent - 1}`);
  });
});

describe('the sandbox provider with a latency', () => {
  it('takes its abort listener off the send timeout signal once the send is answered', async () => {
    const gateway = new SandboxGateway({ latencyMs: 5 });
    const signal = AbortSignal.timeout(5000);
    for (let i = 0; i < 3; i++) {
      const result = await gateway.send(message(`latency-${i}`), context({ signal }));
      expect(result.kind).toBe('accepted');
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('answers a send whose signal has already fired as timed out, without waiting out the latency', async () => {
    const gateway = new SandboxGateway({ latencyMs: 60_000 });
    const result = await gateway.send(message('latency-aborted'), context({ signal: AbortSignal.abort() }));
    expect(result).toMatchObject({ kind: 'failed', outcomeUnknown: true, providerCode: 'timeout' });
  });
});
