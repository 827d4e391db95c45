// In your application: from 'leasehold/prisma'. The example imports the repository's source.
import { cancelHold, createHold } from '../../../src/integrations/prisma.js';
import type { PrismaClient } from '../generated/client.js';

/**
 * Book a slot: the Booking row and its 20-minute hold in one interactive
 * transaction. A slot already booked fails on its @unique, and the hold is
 * rolled back with it: no hold, no expiry email.
 */
export async function book(prisma: PrismaClient, input: { slot: string; customerEmail: string }, schema = 'leasehold') {
  return prisma.$transaction(async (tx) => {
    const id = `booking-${input.slot}-${Date.now().toString(36)}`;
    const { hold } = await createHold(tx, { id: `hold-${id}`, customerEmail: input.customerEmail, ttlSeconds: 20 * 60, metadata: { slot: input.slot } }, { schema });
    const booking = await tx.booking.create({ data: { id, slot: input.slot, customerEmail: input.customerEmail, holdId: hold.id } });
    return { booking, hold };
  });
}

/** Cancel a booking: the row goes and its hold is cancelled (no email), together. */
export async function cancel(prisma: PrismaClient, bookingId: string, schema = 'leasehold') {
  return prisma.$transaction(async (tx) => {
    const booking = await tx.booking.delete({ where: { id: bookingId } });
    return cancelHold(tx, booking.holdId, { schema });
  });
}
