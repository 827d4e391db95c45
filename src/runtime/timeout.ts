/**
 * `work`, or a rejection with `error()` once `ms` have passed without an
 * answer. The work itself is not cancelled (a query keeps its connection
 * until the server answers); the timer never keeps the process alive.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, error: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** How long /healthz and a /metrics scrape wait for the database before they report it unreachable. */
export const STATUS_READ_TIMEOUT_MS = 3000;
