import { describe, expect, it } from 'vitest';
import { tally } from '../../src/timers/tally.js';
import { planWorkload } from '../../src/timers/workload.js';

const send = (holdId: string, possibleDuplicate = false) => ({ holdId, possibleDuplicate });

describe('tally', () => {
  it('counts each way of losing or doubling from final states and recorded sends', () => {
    const t = tally(
      [
        { id: 'a', status: 'held' },
        { id: 'b', status: 'expired' },
        { id: 'c', status: 'expired' },
        { id: 'd', status: 'expired' },
        { id: 'e', status: 'expired' },
        { id: 'f', status: 'confirmed' },
        { id: 'g', status: 'confirmed' },
      ],
      [send('c'), send('d'), send('d'), send('e'), send('e', true), send('e', true), send('g')],
    );
    expect(t).toEqual({
      holds: 7,
      confirmed: 2,
      expired: 4,
      neverExpired: 1,
      expiredNotEmailed: 1,
      unflaggedDoubles: 1,
      flaggedDoubles: 1,
      confirmedEmailed: 1,
      sends: 7,
    });
  });

  it('a double is unflagged if any repeat was sent without the flag; the first send needs none', () => {
    const holds = [{ id: 'a', status: 'expired' as const }];
    expect(tally(holds, [send('a'), send('a', true), send('a')]).unflaggedDoubles).toBe(1);
    expect(tally(holds, [send('a'), send('a', true)]).flaggedDoubles).toBe(1);
  });
});

describe('planWorkload', () => {
  it('the same seed plans the same holds, deadlines and confirmations', () => {
    const a = planWorkload({ holds: 50, seconds: 3, seed: 7 });
    expect(planWorkload({ holds: 50, seconds: 3, seed: 7 })).toEqual(a);
    expect(planWorkload({ holds: 50, seconds: 3, seed: 8 })).not.toEqual(a);
  });

  it('spreads deadlines after the lead and confirms a share of holds around their deadline', () => {
    const plan = planWorkload({ holds: 400, seconds: 4, seed: 1, leadMs: 1000, confirmShare: 0.25, confirmSpreadMs: 250 });
    expect(plan.holds[0]!.dueMs).toBe(1000);
    expect(plan.lastDueMs).toBe(5000);
    expect(new Set(plan.holds.map((h) => h.id)).size).toBe(400);
    const confirmed = plan.holds.filter((h) => h.confirmAtMs !== null);
    expect(confirmed.length).toBeGreaterThan(60);
    expect(confirmed.length).toBeLessThan(140);
    for (const h of confirmed) expect(Math.abs(h.confirmAtMs! - h.dueMs)).toBeLessThanOrEqual(250);
    // Some land before the deadline, some after it (racing the expirer).
    expect(confirmed.some((h) => h.confirmAtMs! < h.dueMs)).toBe(true);
    expect(confirmed.some((h) => h.confirmAtMs! > h.dueMs)).toBe(true);
  });
});
