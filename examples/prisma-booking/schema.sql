-- The application's own table. A slot can be booked once: a second booking
-- of the same slot fails on the UNIQUE, and rolls its hold back with it.
CREATE TABLE IF NOT EXISTS bookings (
  id text PRIMARY KEY,
  slot text NOT NULL UNIQUE,
  customer_email text NOT NULL,
  hold_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
