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
