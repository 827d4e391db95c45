import { DELIVERY_ROUND_OVERHEAD_MS } from './constants.js';
import { roundEmails, roundSize as roundSizeOf, roundsInFlight } from '../model/delivery-policy.js';
import type { Workload } from './input.js';

/**
 * What one delivery round carries and how long it takes, as the delivery
 * lane plans it (model/delivery-policy.ts): the capacity model's sending
 * rate, burst and statement counts all start here.
 */

/** Intents one delivery round leases: the worker caps the batch at its concurrency. */
export const roundSize = (w: Workload): number => roundSizeOf(w.deployment.deliveryBatch, w.deployment.deliveryConcurrency);

/**
 * What one delivery round leases on an account carrying `emailsPerRequest`
 * per request, as delivery/legs.ts does: a send slot is a request, a round
 * reserves roundSize slots and leases up to a batch per slot, but no more
 * than the larger of roundSize and one batch. Without batching: roundSize
 * emails in as many requests.
 */
export function roundLease(w: Workload, emailsPerRequest = 1): { emails: number; requests: number } {
  const k = roundSize(w);
  const emails = roundEmails(k, k, emailsPerRequest);
  return { emails, requests: Math.ceil(emails / Math.max(1, emailsPerRequest)) };
}

/**
 * What one worker keeps in flight: its rounds overlap (model/delivery-policy.ts
 * roundsInFlight), their requests never more than its concurrency, each
 * carrying its round's share of emails.
 */
export function inFlightPerWorker(w: Workload, emailsPerRequest = 1): { requests: number; emails: number } {
  const round = roundLease(w, emailsPerRequest);
  const rounds = roundsInFlight(w.deployment.deliveryBatch, w.deployment.deliveryConcurrency);
  const requests = Math.min(w.deployment.deliveryConcurrency, rounds * round.requests);
  return { requests, emails: (requests * round.emails) / round.requests };
}

/** Seconds one round takes: the provider call plus the round's own statements. */
export const roundSeconds = (w: Workload): number => (w.provider.latencyMs + DELIVERY_ROUND_OVERHEAD_MS) / 1000;

/**
 * Emails/s the delivery workers can send at the assumed latency: the emails
 * they keep in flight / round time, on an account carrying
 * `emailsPerRequest` per provider request (its batch; 1 without batching).
 */
export function deliveryCapacity(w: Workload, emailsPerRequest = 1): number {
  return (w.deployment.workers * inFlightPerWorker(w, emailsPerRequest).emails) / roundSeconds(w);
}
