import { describe, expect, it } from 'vitest';
import { planRequests, withoutUnsent } from '../../src/delivery/requests.js';
import type { LeasedIntent } from '../../src/tables/outbox.js';

const intent = (id: string, extra: Partial<LeasedIntent> = {}): LeasedIntent =>
  ({ id, previousOutcomeUnknown: false, batchId: null, batchPosition: null, sendAlone: false, ...extra }) as LeasedIntent;

const shape = (r: ReturnType<typeof planRequests>) =>
  r.map((q) => (q.kind === 'single' ? q.intent.id : `${q.batchId ?? 'new'}:${q.members.map((m) => m.id).join(',')}`));

describe('planRequests', () => {
  it('without batches every intent is its own request', () => {
    expect(shape(planRequests([intent('a'), intent('b')], { batch: 1, keyed: true }))).toEqual(['a', 'b']);
  });

  it('chunks in lease order; a chunk of one is a single send', () => {
    const ids = ['a', 'b', 'c', 'd', 'e'].map((id) => intent(id));
    expect(shape(planRequests(ids, { batch: 2, keyed: false }))).toEqual(['new:a,b', 'new:c,d', 'e']);
  });

  it('an open batch goes again whole, in its recorded order', () => {
    const ids = [intent('x', { batchId: 'B', batchPosition: 1 }), intent('n'), intent('w', { batchId: 'B', batchPosition: 0 })];
    expect(shape(planRequests(ids, { batch: 10, keyed: true }))).toEqual(['B:w,x', 'n']);
  });

  it('on a keyed account an unknown earlier outcome goes alone under its own key; elsewhere it may join a batch', () => {
    const ids = [intent('u', { previousOutcomeUnknown: true }), intent('a'), intent('b')];
    expect(shape(planRequests(ids, { batch: 10, keyed: true }))).toEqual(['u', 'new:a,b']);
    expect(shape(planRequests(ids, { batch: 10, keyed: false }))).toEqual(['new:u,a,b']);
  });

  it('an intent a refused batch could not tell apart goes alone', () => {
    const ids = [intent('s', { sendAlone: true }), intent('a'), intent('b')];
    expect(shape(planRequests(ids, { batch: 10, keyed: false }))).toEqual(['s', 'new:a,b']);
  });
});

describe('withoutUnsent', () => {
  it('takes the unsent out of the plan without planning again: an open batch keeps its id and order, a new batch of one is a single', () => {
    const ids = [intent('w', { batchId: 'B', batchPosition: 0 }), intent('x', { batchId: 'B', batchPosition: 1 }), intent('a'), intent('b'), intent('c'), intent('d')];
    const plan = planRequests(ids, { batch: 2, keyed: true });
    expect(shape(plan)).toEqual(['B:w,x', 'new:a,b', 'new:c,d']);
    const unsent = new Set(['x', 'a', 'c', 'd']);
    expect(shape(withoutUnsent(plan, (i) => !unsent.has(i.id)))).toEqual(['B:w', 'b']);
    expect(withoutUnsent(plan, () => true)).toEqual(plan);
    expect(withoutUnsent(plan, () => false)).toEqual([]);
  });
});
