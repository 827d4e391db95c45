import type { SendsBin } from './chart.js';
import type { DrillApi, StatusBody, TimelineBody } from './client.js';
import {
  drainAllowanceSeconds,
  evaluateDrill,
  predictedDrainSeconds,
  type DrillHold,
  type DrillObservations,
  type DrillPolicy,
  type DrillSample,
  type DrillVerdict,
} from './criteria.js';

/**
 * The drill of the design brief, through the API: pause delivery, create
 * holds that fall due while it is paused, let their intents wait past one
 * hold window, resume at the configured rate, and sample /v1/status every
 * second until the backlog is gone. Then read every drill hold's story and
 * judge (criteria.ts).
 */

export interface DrillOptions {
  api: DrillApi;
  holdWindowS: number;
  holds: number;
  policy: DrillPolicy;
  /** One line per sample and per phase; the CLI prints them. */
  progress?: (line: string) => void;
  /** Distinguishes this run's holds (drill-<runId>-<n>). */
  runId?: string;
}

export interface DrillRun {
  runId: string;
  startedAt: Date;
  durationS: number;
  /** The rate limit before the drill (put back afterwards). */
  previousPolicy: DrillPolicy;
  observations: DrillObservations;
  sends: SendsBin[];
  verdict: DrillVerdict;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

// Requests in flight at once while creating holds and reading their stories.
const CONCURRENCY = 8;

async function eachLimited<T>(items: T[], work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}

/**
 * The database's clock minus ours, estimated from a response carrying a
 * database timestamp: the server stamped it somewhere between sending and
 * receiving, so the error is at most half the round trip. The best (shortest
 * round trip) estimate wins.
 */
class ClockOffset {
  private best: { offsetMs: number; rttMs: number } | undefined;
  observe(serverIso: string | null | undefined, sentMs: number, receivedMs: number): void {
    if (!serverIso) return;
    const rttMs = receivedMs - sentMs;
    if (this.best && this.best.rttMs <= rttMs) return;
    this.best = { offsetMs: Date.parse(serverIso) - (sentMs + receivedMs) / 2, rttMs };
  }
  /** A database time as local ms. */
  toLocal(serverIso: string): number {
    return Date.parse(serverIso) - (this.best?.offsetMs ?? 0);
  }
}

export async function runDrill(options: DrillOptions): Promise<DrillRun> {
  const { api, holdWindowS, policy } = options;
  const say = options.progress ?? (() => {});
  const runId = options.runId ?? Date.now().toString(36);
  const startMs = Date.now();
  const t = (ms: number) => (ms - startMs) / 1000;
  const clock = new ClockOffset();
  const samples: DrillSample[] = [];

  const previousPolicy = (await api.request<DrillPolicy>('GET', '/v1/rate-limit')).body;
  const first = (await api.request<StatusBody>('GET', '/v1/status')).body;
  if (first.stats.control.paused) {
    throw new Error(`delivery is already paused (${first.stats.control.reason ?? 'no reason'}); resume it before running the drill`);
  }
  const promises = first.promises;

  // Sampling runs beside the phases, once a second on the second.
  let lastSends = sumSends(first.sendsLastHour);
  let phase = 'setup';
  let sampling = true;
  const sampler = (async () => {
    for (let k = 1; sampling; k++) {
      await sleep(startMs + k * 1000 - Date.now());
      if (!sampling) break;
      try {
        const { body, sentMs, receivedMs } = await api.request<StatusBody>('GET', '/v1/status');
        const sample: DrillSample = {
          t: t((sentMs + receivedMs) / 2),
          paused: body.stats.control.paused,
          backlog: body.stats.delivery.backlog,
          oldestPendingAgeS: body.stats.delivery.oldestPendingAgeSeconds,
          dueHolds: body.stats.expiry.dueHolds,
          oldestDueAgeS: body.stats.expiry.oldestDueAgeSeconds,
        };
        samples.push(sample);
        const sends = sumSends(body.sendsLastHour);
        say(progressLine(sample, phase, promises.emailPromiseS, Math.max(0, sends - lastSends)));
        lastSends = sends;
      } catch (error) {
        say(`t=${t(Date.now()).toFixed(0)}s  status unavailable: ${(error as Error).message}`);
      }
      // A slow status answer skips the seconds it covered instead of piling requests up.
      k = Math.max(k, Math.floor((Date.now() - startMs) / 1000));
    }
  })();

  let pausedAt = 0;
  let resumedAt = 0;
  let resumed = false;
  let backlogAtResume = 0;
  const holdIds = Array.from({ length: options.holds }, (_, i) => `drill-${runId}-${i + 1}`);
  try {
    await api.request('PUT', '/v1/rate-limit', policy);
    const was = previousPolicy.perSecond === policy.perSecond && previousPolicy.burst === policy.burst ? '' : ` (was ${previousPolicy.perSecond}/s, burst ${previousPolicy.burst}; put back afterwards)`;
    say(`rate limit ${policy.perSecond}/s, burst ${policy.burst}${was}`);
    const pause = await api.request<{ pausedAt: string | null }>('POST', '/v1/delivery/pause', { reason: `drill ${runId}: delivery paused on purpose` });
    clock.observe(pause.body.pausedAt, pause.sentMs, pause.receivedMs);
    pausedAt = t(pause.receivedMs);
    phase = 'PAUSED';
    say(`delivery paused; creating ${options.holds} holds with a ${holdWindowS} s window`);

    let latestDeadlineMs = 0;
    await eachLimited(holdIds, async (id, i) => {
      const created = await api.request<{ createdAt: string; expiresAt: string }>('POST', '/v1/holds', {
        id,
        customerEmail: `drill+${i + 1}@example.com`,
        ttlSeconds: holdWindowS,
        metadata: { drill: runId },
      });
      clock.observe(created.body.createdAt, created.sentMs, created.receivedMs);
      latestDeadlineMs = Math.max(latestDeadlineMs, Date.parse(created.body.expiresAt));
    });
    // Every hold falls due, then its intent waits one more hold window.
    const resumeAtMs = clock.toLocal(new Date(latestDeadlineMs).toISOString()) + holdWindowS * 1000 + 500;
    say(`holds created; they fall due in ${holdWindowS} s, and delivery stays paused until t=${t(resumeAtMs).toFixed(0)}s (one more hold window)`);
    await sleep(resumeAtMs - Date.now());

    const before = (await api.request<StatusBody>('GET', '/v1/status')).body;
    backlogAtResume = before.stats.delivery.backlog;
    const predicted = predictedDrainSeconds(backlogAtResume, policy);
    const allowed = drainAllowanceSeconds(predicted);
    resumedAt = t(Date.now());
    await api.request('POST', '/v1/delivery/resume');
    resumed = true;
    phase = 'draining';
    say(`delivery resumed with ${backlogAtResume} pending: predicted drain ${predicted.toFixed(1)} s at ${policy.perSecond}/s after a burst of ${policy.burst} (allowed ${allowed.toFixed(1)} s)`);

    // Until the backlog is gone (plus two seconds of tail for the chart), or the allowance runs out.
    const deadlineMs = startMs + (resumedAt + allowed + 2) * 1000;
    let drainedAtMs: number | undefined;
    while (Date.now() < deadlineMs) {
      await sleep(250);
      const last = samples.at(-1);
      if (drainedAtMs === undefined && last && last.t > resumedAt && last.backlog === 0) drainedAtMs = Date.now();
      if (drainedAtMs !== undefined && Date.now() - drainedAtMs >= 2000) break;
    }
    phase = 'done';
  } finally {
    sampling = false;
    await sampler;
    // Never leave a deployment paused or at the drill's rate, whatever failed.
    if (!resumed && pausedAt > 0) await api.request('POST', '/v1/delivery/resume').catch(() => {});
    if (previousPolicy.perSecond !== policy.perSecond || previousPolicy.burst !== policy.burst) {
      await api.request('PUT', '/v1/rate-limit', { perSecond: previousPolicy.perSecond, burst: previousPolicy.burst }).catch(() => {});
    }
  }

  say(`reading the stories of ${holdIds.length} drill holds`);
  const holds: DrillHold[] = new Array(holdIds.length);
  const at = (iso: string | null) => (iso === null ? null : t(clock.toLocal(iso)));
  await eachLimited(holdIds, async (id, i) => {
    const { body } = await api.request<TimelineBody>('GET', `/v1/holds/${encodeURIComponent(id)}`);
    holds[i] = {
      id,
      expiresAt: at(body.hold.expiresAt)!,
      expiredAt: at(body.hold.expiredAt),
      acceptedAt: body.intent?.state === 'sent' ? at(body.intent.sentAt) : null,
      attempts: body.attempts.map((a) => ({ startedAt: at(a.startedAt)!, outcome: a.outcome })),
    };
  });

  const durationS = t(Date.now());
  const observations: DrillObservations = { policy, promises, holdWindowS, pausedAt, resumedAt, backlogAtResume, samples, holds };
  return {
    runId,
    startedAt: new Date(startMs),
    durationS,
    previousPolicy,
    observations,
    sends: sendsPerSecond(holds, durationS),
    verdict: evaluateDrill(observations),
  };
}

const sumSends = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** Attempts per 1 s bin [k, k + 1), by outcome, for the chart. */
export function sendsPerSecond(holds: DrillHold[], durationS: number): SendsBin[] {
  const bins: SendsBin[] = Array.from({ length: Math.max(1, Math.ceil(durationS)) }, (_, k) => ({ t: k, accepted: 0, other: 0 }));
  for (const attempt of holds.flatMap((h) => h.attempts)) {
    const k = Math.floor(attempt.startedAt);
    const bin = bins[Math.min(Math.max(0, k), bins.length - 1)]!;
    if (attempt.outcome === 'accepted') bin.accepted++;
    else bin.other++;
  }
  return bins;
}

function progressLine(s: DrillSample, phase: string, emailPromiseS: number, sends: number): string {
  return (
    `t=${s.t.toFixed(0).padStart(3)}s  ${phase.padEnd(8)}  backlog ${String(s.backlog).padStart(5)}  ` +
    `oldest pending ${s.oldestPendingAgeS.toFixed(1).padStart(6)} s / ${emailPromiseS} s  ` +
    `due holds ${String(s.dueHolds).padStart(4)} (oldest ${s.oldestDueAgeS.toFixed(1)} s)  sends/s ${sends}`
  );
}
