import pg from 'pg';

/**
 * The client-side query timeout (connectionBounds' `queryTimeoutMs`),
 * applied by a pg.Client subclass rather than by pg's own `query_timeout`
 * option. The behaviour is pg's: after `ms` without an answer the query
 * fails with "Query read timeout", a query still waiting in the client's
 * queue is taken out of it, and an answer that comes later is ignored; a
 * query config's own `query_timeout` (unboundedQuery, the LISTEN session's
 * heartbeat) replaces the default for that query.
 *
 * Why not pg's option: pg builds its callback wrapper inside
 * `Client.query()`, and with it in place nearly every object a query
 * produces (its rows, their dates and strings, the statement text)
 * outlived the next young-generation collection and was copied into the
 * old generation. In a bare loop of pool.query, 99.5 % of what survived
 * one scavenge survived the next with pg's option, 5 % with the same
 * wrapper made outside `Client.query()`; the due benchmark's process
 * promoted 19-22 MB instead of 45-52, with 2-3 full collections instead of
 * 5-8 (BENCHMARKS.md, "the query timeout and the old generation"). The
 * functions below keep each closure's scope to what it needs: nothing but
 * the timer holds the query, and the timer is cleared on the answer.
 */
export function withQueryTimeout(Base: typeof pg.Client, defaultMs: number): typeof pg.Client {
  if (!(defaultMs > 0)) return Base;
  class TimedClient extends Base {
    override query(...args: unknown[]): any {
      const [config, values, callback] = args;
      const ms = timeoutOf(config, defaultMs);
      // Anything else (a cursor, a stream, pg's own argument errors) is pg's to handle.
      if (ms === undefined) return (super.query as (...a: unknown[]) => unknown)(...args);
      const query = new pg.Query(config as pg.QueryConfig, values as unknown[], callback as never) as unknown as PendingQuery;
      const promised = query.callback ? undefined : settleOnCallback(query);
      const timer = setTimeout(timedOut, ms, this as unknown as ClientQueue, query, query.callback!);
      query.callback = clearingTimer(query.callback!, timer);
      super.query(query as unknown as pg.Submittable);
      return promised;
    }
  }
  return TimedClient as unknown as typeof pg.Client;
}

/** The timeout for one query: its own `query_timeout`, else the default; undefined for what is not a plain query. */
function timeoutOf(config: unknown, defaultMs: number): number | undefined {
  if (typeof config === 'string') return defaultMs;
  if (config === null || typeof config !== 'object' || typeof (config as { submit?: unknown }).submit === 'function') return undefined;
  const own = (config as { query_timeout?: unknown }).query_timeout;
  return typeof own === 'number' && own > 0 ? own : defaultMs;
}

type QueryCallback = (error: Error | null, result?: unknown) => void;

/** What this module reads and writes on a pg.Query. */
interface PendingQuery {
  callback: QueryCallback | undefined;
}

/** What a timeout does on the client, as pg's own `query_timeout` does it (pg 8 internals). */
interface ClientQueue {
  _queryQueue?: unknown[];
  _pulseQueryQueue?: () => void;
  pipeline?: boolean;
  connection: { stream: { destroy(): void } };
}

/**
 * A promise for the query's answer, as `client.query(text)` without a
 * callback returns one. The callback is made by `settler`, so its scope
 * holds the promise's two functions and not the query.
 */
function settleOnCallback(query: PendingQuery): Promise<unknown> {
  let settle: QueryCallback | undefined;
  const answer = new Promise((resolve, reject) => (settle = settler(resolve, reject)));
  query.callback = settle;
  return answer.catch(restack);
}

function settler(resolve: (result: unknown) => void, reject: (error: Error) => void): QueryCallback {
  return (error, result) => (error ? reject(error) : resolve(result));
}

/** pg's own: the stack of a query's error leads back to the caller rather than to the socket's read. */
function restack(error: Error): never {
  Error.captureStackTrace(error);
  throw error;
}

function clearingTimer(callback: QueryCallback, timer: NodeJS.Timeout): QueryCallback {
  return (error, result) => {
    clearTimeout(timer);
    callback(error, result);
  };
}

function timedOut(client: ClientQueue, query: PendingQuery, callback: QueryCallback): void {
  callback(new Error('Query read timeout'));
  // The answer, if it comes, is ignored: the caller has had its error.
  query.callback = () => {};
  const queue = client._queryQueue;
  const index = queue ? queue.indexOf(query) : -1;
  if (index > -1) {
    // Never sent: taken out of the queue.
    queue!.splice(index, 1);
  } else if (client.pipeline) {
    // Sent on a pipelined connection, whose later answers would all wait behind it.
    client.connection.stream.destroy();
    return;
  }
  client._pulseQueryQueue?.();
}
