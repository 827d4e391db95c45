/**
 * What a contender lost or doubled, from two facts that survive every
 * crash: the holds' final states in the database and the sends the
 * recording sink received. Pure.
 */

export type FinalStatus = 'held' | 'confirmed' | 'cancelled' | 'expired';

export interface RecordedSend {
  holdId: string;
  /** The sender marked this send as a possible duplicate. */
  possibleDuplicate: boolean;
}

export interface Tally {
  holds: number;
  /** The application's confirmation won the race. */
  confirmed: number;
  expired: number;
  /** Every deadline has passed and the hold is still held. */
  neverExpired: number;
  /** Expired, but the customer was never told. */
  expiredNotEmailed: number;
  /** Sent more than once, and some repeat carried no possible-duplicate flag. */
  unflaggedDoubles: number;
  /** Sent more than once, every repeat flagged as a possible duplicate. */
  flaggedDoubles: number;
  /** The customer confirmed, and was told the hold expired. */
  confirmedEmailed: number;
  sends: number;
}

export function tally(holds: Array<{ id: string; status: FinalStatus }>, sends: RecordedSend[]): Tally {
  const byHold = new Map<string, RecordedSend[]>();
  for (const send of sends) {
    const list = byHold.get(send.holdId) ?? [];
    list.push(send);
    byHold.set(send.holdId, list);
  }
  const t: Tally = {
    holds: holds.length,
    confirmed: 0,
    expired: 0,
    neverExpired: 0,
    expiredNotEmailed: 0,
    unflaggedDoubles: 0,
    flaggedDoubles: 0,
    confirmedEmailed: 0,
    sends: sends.length,
  };
  for (const hold of holds) {
    const received = byHold.get(hold.id) ?? [];
    if (hold.status === 'confirmed') t.confirmed++;
    if (hold.status === 'expired') t.expired++;
    if (hold.status === 'held') t.neverExpired++;
    if (hold.status === 'expired' && received.length === 0) t.expiredNotEmailed++;
    if (hold.status === 'confirmed' && received.length > 0) t.confirmedEmailed++;
    if (received.length > 1) {
      // The first send is the email; every later one is a repeat the
      // recipient can only recognise if the sender said so.
      if (received.slice(1).every((s) => s.possibleDuplicate)) t.flaggedDoubles++;
      else t.unflaggedDoubles++;
    }
  }
  return t;
}
