import type { CompareTimersResult } from './run.js';
import type { Tally } from './tally.js';

const LOSSES: Array<[keyof Tally, string]> = [
  ['neverExpired', 'holds never expired'],
  ['expiredNotEmailed', 'expired, never emailed'],
  ['unflaggedDoubles', 'emailed twice, no flag'],
  ['confirmedEmailed', 'emailed, but confirmed'],
];

const CONTEXT: Array<[keyof Tally, string]> = [
  ['flaggedDoubles', 'emailed twice, flagged'],
  ['confirmed', 'confirmed (won the race)'],
  ['expired', 'expired'],
  ['sends', 'emails sent'],
];

/** The comparison as aligned text: what was lost or doubled first, then the context. */
export function formatComparison(result: CompareTimersResult): string[] {
  const names = result.contenders.map((c) => c.name);
  const labelWidth = Math.max(...[...LOSSES, ...CONTEXT].map(([, label]) => label.length), 'SIGKILLs (at send + timed)'.length);
  const width = Math.max(10, ...names.map((n) => n.length));
  const row = (label: string, cells: string[]) => `${label.padEnd(labelWidth)}  ${cells.map((c) => c.padStart(width)).join('  ')}`;
  const lines = [
    `${result.holds} holds due over ${result.seconds}s, ${result.confirmAttempts} confirmed at the last moment; ` +
      `SIGKILL ${result.killEverySends > 0 ? `at every ${result.killEverySends}th send` : 'never at a send'}` +
      `${result.killEveryMs > 0 ? ` and every ${result.killEveryMs} ms` : ''}; seed ${result.seed}`,
    '',
    row('', names),
    ...LOSSES.map(([key, label]) => row(label, result.contenders.map((c) => String(c.tally[key])))),
    row('', names.map(() => '-'.repeat(width))),
    ...CONTEXT.map(([key, label]) => row(label, result.contenders.map((c) => String(c.tally[key])))),
    row('SIGKILLs (at send + timed)', result.contenders.map((c) => `${c.killsAtSend} + ${c.killsTimed}`)),
    row('process starts', result.contenders.map((c) => String(c.starts))),
  ];
  for (const c of result.contenders) {
    if (!c.settled) lines.push(`note: ${c.name} still had durable work pending when the settle timeout ended; its losses may be late work`);
    if (c.unexpectedExits > 0) lines.push(`note: ${c.name} exited by itself ${c.unexpectedExits} time(s): ${c.stderrTail?.trim().split('\n').pop() ?? ''}`);
  }
  lines.push('', ...result.contenders.map((c) => `${c.name}: ${c.design}`), '', `took ${result.elapsedSeconds}s`);
  return lines;
}
