import { describe, expect, it } from 'vitest';
import { classifyPostmarkError } from '../../src/providers/classify-postmark.js';
import { classifyResendError } from '../../src/providers/classify-resend.js';
import { classifySesError } from '../../src/providers/classify-ses.js';
import { classifySmtpError } from '../../src/providers/classify-smtp.js';
import type { SendResult } from '../../src/providers/gateway.js';
import { redactAddresses } from '../../src/providers/provider-common.js';

const reasonOf = (result: SendResult) => ('reason' in result ? result.reason : '');

describe('no recipient address in a reason (reasons reach logs and the attempts table)', () => {
  it('redactAddresses replaces every address-looking token', () => {
    expect(redactAddresses('550 5.1.1 <jane.doe+x@example.net>: Recipient address rejected')).toBe(
      '550 5.1.1 <<address>>: Recipient address rejected',
    );
    expect(redactAddresses('Found inactive addresses: a@b.co, c@d.io. Inactive')).toBe('Found inactive addresses: <address>, <address>. Inactive');
    expect(redactAddresses('no address here')).toBe('no address here');
  });

  it('each classifier redacts the provider text it quotes', () => {
    const results = [
      classifyPostmarkError({ status: 422, errorCode: 406, message: 'Found inactive addresses: jane@example.net. Inactive recipients ...' }),
      classifyResendError({ status: 403, name: 'validation_error', message: 'You can only send testing emails to your own email address (owner@example.com).', headers: {} }),
      classifySesError({ name: 'MessageRejected', message: 'Email address is not verified: jane@example.net', status: 400 }),
      classifySmtpError({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 <jane@example.net>: user unknown', command: 'RCPT TO', dataStarted: false }),
    ];
    for (const result of results) {
      expect(reasonOf(result)).not.toBe('');
      expect(reasonOf(result)).not.toMatch(/@/);
    }
  });
});
