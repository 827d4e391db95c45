import Fastify, { type FastifyInstance } from 'fastify';
import type pg from 'pg';
// In your application: from 'leasehold'. The example imports the repository's source.
import { confirmHold, createHold, withTransaction } from '../../../src/index.js';

/** A schema name as a quoted identifier (the only text spliced into SQL; values are parameters). */
export const quoted = (name: string): string => `"${name.replace(/"/g, '""')}"`;

export interface BookingAppOptions {
  pool: pg.Pool;
  /** leasehold's schema; the bookings table lives there too in this example. */
  schema: string;
}

interface BookingBody {
  slot: string;
  customerEmail: string;
}

/**
 * POST /bookings writes the booking row and its 20-minute hold in ONE
 * transaction: both commit, or (the slot is already booked) neither does,
 * so there is never a hold, and never an expiry email, without its booking.
 */
export function buildApp({ pool, schema }: BookingAppOptions): FastifyInstance {
  const app = Fastify();
  const bookings = `${quoted(schema)}.bookings`;

  app.post<{ Body: BookingBody }>('/bookings', async (request, reply) => {
    const { slot, customerEmail } = request.body;
    const id = `booking-${slot}-${Date.now().toString(36)}`;
    try {
      const result = await withTransaction(pool, async (client) => {
        const { hold } = await createHold(client, { id: `hold-${id}`, customerEmail, ttlSeconds: 20 * 60, metadata: { slot } }, { schema });
        await client.query(`INSERT INTO ${bookings} (id, slot, customer_email, hold_id) VALUES ($1, $2, $3, $4)`, [id, slot, customerEmail, hold.id]);
        return { booking: { id, slot }, hold };
      });
      return reply.code(201).send(result);
    } catch (error) {
      if ((error as { code?: string }).code === '23505') return reply.code(409).send({ error: `slot ${slot} is already booked` });
      throw error;
    }
  });

  app.post<{ Params: { id: string } }>('/bookings/:id/confirm', async (request, reply) => {
    const { rows } = await pool.query<{ hold_id: string }>(`SELECT hold_id FROM ${bookings} WHERE id = $1`, [request.params.id]);
    if (!rows[0]) return reply.code(404).send({ error: 'no such booking' });
    return { hold: await confirmHold(pool, rows[0].hold_id, { schema }) };
  });

  return app;
}
