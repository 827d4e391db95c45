/**
 * The drill talks to leasehold only through its HTTP API, as an operator's
 * script would: the same code drives a remote deployment and the embedded
 * one the drill starts for itself.
 */

export class DrillApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TimedResponse<T> {
  body: T;
  /** Local clock (ms) when the request was sent and when the answer arrived. */
  sentMs: number;
  receivedMs: number;
}

export class DrillApi {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
    private readonly timeoutMs = 10_000,
  ) {}

  async request<T>(method: string, path: string, body?: unknown): Promise<TimedResponse<T>> {
    const sentMs = Date.now();
    let response: Response;
    try {
      response = await fetch(new URL(path, this.baseUrl), {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new DrillApiError(0, 'unreachable', `${method} ${path}: ${(error as Error).message}`);
    }
    const text = await response.text();
    const receivedMs = Date.now();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new DrillApiError(response.status, error?.code ?? 'http_error', `${method} ${path}: ${response.status} ${error?.message ?? text.slice(0, 200)}`);
    }
    return { body: parsed as T, sentMs, receivedMs };
  }
}

/** The parts of GET /v1/status the drill reads. */
export interface StatusBody {
  stats: {
    expiry: { dueHolds: number; oldestDueAgeSeconds: number };
    delivery: { backlog: number; oldestPendingAgeSeconds: number };
    control: { paused: boolean; reason: string | null };
    limiter?: { perSecond: number; burst: number } | null;
  };
  sendsLastHour: Record<string, number>;
  promises: { expiryPromiseS: number; emailPromiseS: number };
}

/** The parts of GET /v1/holds/:id the drill reads (dates as ISO strings). */
export interface TimelineBody {
  hold: { id: string; status: string; expiresAt: string; expiredAt: string | null };
  intent: { state: string; sentAt: string | null } | null;
  attempts: Array<{ startedAt: string; outcome: string | null }>;
}
