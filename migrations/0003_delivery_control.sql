-- The one shared rate limiter: a token bucket whose policy and state live
-- here, refilled from the database clock, so every delivery process on every
-- machine draws from the same permits.
CREATE TABLE rate_limiter (
  name           text             PRIMARY KEY,
  per_second     double precision NOT NULL,
  burst          integer          NOT NULL,
  tokens         double precision NOT NULL,
  refilled_at    timestamptz      NOT NULL DEFAULT now(),
  -- Set when a provider answers "rate limited": nobody takes permits until then.
  cooldown_until timestamptz,
  updated_at     timestamptz      NOT NULL DEFAULT now(),
  CONSTRAINT rate_limiter_policy CHECK (per_second > 0 AND burst >= 1),
  CONSTRAINT rate_limiter_tokens CHECK (tokens >= 0 AND tokens <= burst)
);

-- Fleet-wide delivery switch: one row. Paused by an operator or by a
-- provider answer that is not the message's fault (bad key, quota, suspension).
CREATE TABLE delivery_control (
  id           boolean     PRIMARY KEY DEFAULT true,
  paused       boolean     NOT NULL DEFAULT false,
  reason       text,
  paused_by    text,
  paused_at    timestamptz,
  -- A pause that lifts itself (a provider quota that frees at a known time).
  paused_until timestamptz,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT delivery_control_singleton CHECK (id),
  CONSTRAINT delivery_control_reason CHECK (NOT paused OR reason IS NOT NULL)
);

INSERT INTO delivery_control (id) VALUES (true);
