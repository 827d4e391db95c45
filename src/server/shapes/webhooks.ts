import { z } from 'zod';
import type { IngestResult } from '../../events/ingest.js';
import type { SameKeys } from './common.js';

/** The answers of the provider webhooks (POST /v1/webhooks/...), whose bodies are the providers' own. */

const count = () => z.number().int().nonnegative();

const IngestedShape = z.object({
  received: count().describe('events in the request'),
  stored: count().describe('events stored now'),
  duplicates: count().describe('events stored before (the provider sent them again)'),
  unmatched: count().describe('stored events whose message id matched no accepted attempt'),
  suppressed: count().describe('addresses newly suppressed by these events'),
  ignored: z.string().optional().describe('an event type leasehold does not store (opens, clicks): answered 200 so the provider does not retry it'),
});

/** Events counted; an SNS subscription confirmed; or an SNS message that is not an event, ignored. */
export const WebhookAnswerShape = z
  .union([
    IngestedShape,
    z.object({ confirmed: z.literal(true).describe('an SNS subscription, confirmed with AWS') }),
    z.object({ ignored: z.string().describe('what was ignored (an SNS UnsubscribeConfirmation)') }),
  ])
  .meta({ id: 'WebhookAnswer' });

export type WebhookAnswer = z.output<typeof WebhookAnswerShape>;

const _ingested: SameKeys<Omit<z.output<typeof IngestedShape>, 'ignored'>, IngestResult> = true;
void [_ingested];
