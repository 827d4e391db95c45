import type { DrillRun } from './run.js';

/** The drill's Markdown report: the verdict first, then what was done and measured. */

export const REPORT_FILES = { markdown: 'drill.md', chart: 'drill.svg', data: 'drill.json' } as const;

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
const s1 = (n: number) => n.toFixed(1);

export function renderDrillReport(run: DrillRun, target: string): string {
  const { observations: o, verdict: v } = run;
  const lines: string[] = [];
  lines.push(`# leasehold drill ${run.runId}: ${v.passed ? 'PASSED' : 'FAILED'}`);
  lines.push('');
  lines.push(
    `${run.startedAt.toISOString()}, against ${target}. ${o.holds.length} holds with a ${o.holdWindowS} s window, ` +
      `created while delivery was paused; resumed at ${o.policy.perSecond}/s with a burst of ${o.policy.burst}. ` +
      `Promises: expiry ${o.promises.expiryPromiseS} s, email ${o.promises.emailPromiseS} s.`,
  );
  lines.push('');
  lines.push('| criterion | rule | observed | result |');
  lines.push('|---|---|---|---|');
  for (const c of v.criteria) lines.push(`| ${c.name} | ${cell(c.rule)} | ${cell(c.observed)} | ${c.passed ? 'pass' : '**FAIL**'} |`);
  lines.push('');
  lines.push(`![backlog, oldest age against the promise, sends per second against the limit](${'drill.svg'})`);
  lines.push('');
  lines.push('## Timeline (seconds since the drill started)');
  lines.push('');
  const events: Array<[number, string]> = [[o.pausedAt, 'delivery paused, holds created']];
  const expired = o.holds.map((h) => h.expiredAt).filter((x): x is number => x !== null);
  if (expired.length) events.push([Math.min(...expired), `the first hold expired (the last at t=${s1(Math.max(...expired))}); intents pile up`]);
  events.push([o.resumedAt, `delivery resumed with ${o.backlogAtResume} pending; predicted drain ${s1(v.predictedDrainS)} s (allowed ${s1(v.allowedDrainS)} s)`]);
  const accepted = o.holds.map((h) => h.acceptedAt).filter((x): x is number => x !== null);
  if (accepted.length) events.push([Math.max(...accepted), 'the last drill email accepted']);
  if (v.recoveredAfterS !== null) events.push([o.resumedAt + v.recoveredAfterS, `first sample with the oldest pending age within the ${o.promises.emailPromiseS} s promise`]);
  events.push([run.durationS, 'drill over']);
  for (const [at, what] of events.sort((a, b) => a[0] - b[0])) lines.push(`- t=${s1(at)}: ${what}`);
  lines.push('');
  lines.push(
    `Peak oldest pending age ${s1(v.peakOldestPendingAgeS)} s; at most ${v.maxSendsPerWindow} sends in any 1 s window ` +
      `(limit ${v.sendLimitPerWindow}). Sends are counted at each attempt's start, which the delivery lane stamps ` +
      `in the statement that leases the intent, right after taking its permit. Every sample and every hold's ` +
      `story is in ${REPORT_FILES.data}.`,
  );
  lines.push('');
  return lines.join('\n');
}
