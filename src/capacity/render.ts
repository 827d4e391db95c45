import { seconds, table } from '../format.js';
import type { CostLine } from './costs.js';
import type { AccountsReport, DrainChain } from './fleet.js';
import type { CapacityReport } from './model.js';
import { inFlightPerWorker } from './rounds.js';

/** The human-readable report: every figure with its formula or assumption. */

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const dec = (n: number, digits = 1) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const usd = (n: number) => `$${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const pct = (n: number) => `${Math.round(n * 100)}%`;

function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${dec(v, i === 0 ? 0 : 1)} ${units[i]}`;
}

function unitPrice(n: number): string {
  if (n === 0) return '$0';
  if (n >= 1) return usd(n);
  if (n >= 0.001) return `$${Number(n.toPrecision(3))}`;
  return `$${Number((n * 1e6).toPrecision(3))}/million`;
}

function quantity(n: number): string {
  if (n === 0) return '0';
  if (n >= 100) return int(n);
  if (n >= 1) return dec(n, 1);
  return n.toPrecision(2);
}

function priced(l: CostLine): string {
  if (l.price === null) return '';
  if (l.price === 'email') return `${quantity(l.quantity)} emails: `;
  return `${quantity(l.quantity)} ${l.unit} x ${unitPrice(l.unitUsd)}: `;
}

/** Columns padded to their widest cell, the first row a header. */
function columns(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => `${indent}${row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')}`.trimEnd());
}

const rate = (n: number) => (n >= 100 ? int(n) : n >= 1 ? dec(n, 1) : dec(n, 2));

/** One burst through a chain of accounts: each stage, then the drain and the verdict. */
function chain(c: DrainChain, promise: number): string {
  const stages = c.stages.map((s, i) => {
    const time =
      s.seconds === null
        ? 'never (average demand uses its whole rate)'
        : `(${int(s.emails)} - burst ${int(s.burstEmails)}) / ${dec(s.drainRatePerSecond, 2)}/s = ${seconds(s.seconds)}`;
    return `${i === 0 ? '' : 'then '}${s.account} ${time}${s.quotaRunsOut ? ', its daily quota used up' : ''}`;
  });
  const end =
    c.verdict === 'quota-exhausted'
      ? `${int(c.unsentEmails)} emails wait for a daily quota to reset: quota-exhausted`
      : c.verdict === 'never-drains'
        ? 'never-drains'
        : `oldest email ${seconds(c.oldestEmailAgeSeconds!)} against the ${seconds(promise)} promise: ${c.verdict}`;
  return `${stages.join(', ')}; ${end}`;
}

/** The burst section reads the first account alone; where its daily quota runs out first, say what failover makes of it. */
function quotaOverflow(a: AccountsReport | null): Array<[string, string]> {
  const n = a?.normal;
  if (!n || (n.stages.length === 1 && n.unsentEmails === 0)) return [];
  const first = n.stages[0]!;
  const outcome =
    n.verdict === 'quota-exhausted'
      ? `${int(n.unsentEmails)} emails wait for a quota to reset`
      : n.oldestEmailAgeSeconds === null
        ? 'never-drains'
        : `oldest email ${seconds(n.oldestEmailAgeSeconds)}: ${n.verdict}`;
  return [['daily quota', `${first.account}'s quota runs out after ${int(first.emails)} of them (the lines above ignore it); through failover: ${outcome} (Provider accounts below)`]];
}

function perRequest(a: AccountsReport['accounts'][number]): string {
  if (a.emailsPerRequestFrom === 'default') return a.providerMaxBatch > 1 ? `${a.emailsPerRequest} (${a.provider} maximum)` : '1 (no batch API)';
  return a.emailsPerRequest === 1 && a.providerMaxBatch > 1 ? '1 (batch 1: off)' : `${a.emailsPerRequest} (batch)`;
}

/** The header's sending part for the single account of the provider fields: in emails, and how they follow from the permits. */
function singleSending(w: CapacityReport['workload'], a: AccountsReport['accounts'][number]): string {
  if (a.emailsPerRequest === 1) return `${w.provider.name} at ${w.provider.perSecond}/s burst ${w.provider.burst}`;
  if (a.unit === 'emails') return `${a.provider} at ${rate(a.emailsPerSecond)} emails/s burst ${int(a.burstEmails)}, ${a.emailsPerRequest} per request`;
  return (
    `${a.provider} at ${rate(a.permitsPerSecond)} requests/s x ${a.emailsPerRequest} emails per request = ${rate(a.emailsPerSecond)} emails/s, ` +
    `burst ${int(a.burstPermits)} requests = ${int(a.burstEmails)} emails`
  );
}

function renderAccounts(a: AccountsReport, promise: number): string[] {
  const out: string[] = ['', `Provider accounts (${a.source === '--accounts-file' ? '--accounts-file' : 'LEASEHOLD_ACCOUNTS_FILE'} ${a.file}), in failover order`];
  out.push(
    ...columns([
      ['account', 'provider', 'unit', 'permits/s', 'burst', 'emails/request', 'emails/s', 'daily quota', 'burst share'],
      ...a.accounts.map((x) => [
        `${x.name}${x.role === 'first' ? ' (first)' : ''}`,
        x.provider,
        x.unit,
        rate(x.permitsPerSecond),
        int(x.burstPermits),
        perRequest(x),
        rate(x.emailsPerSecond),
        x.dailyQuota === null
          ? 'none'
          : `${int(x.dailyQuota)} (${rate(x.quotaEmailsPerSecond!)}/s sustained, ${seconds(x.fullRateQuotaSeconds!)} at full rate)`,
        x.normalShare === null ? '-' : pct(x.normalShare),
      ]),
    ]),
  );
  const rows: Array<[string, string]> = [
    [
      'combined',
      a.accounts.length === 1
        ? `${rate(a.combined.emailsPerSecond)} emails/s (one account)`
        : `${rate(a.combined.emailsPerSecond)} emails/s (${rate(a.combined.sustainedEmailsPerSecond)}/s sustained under the quotas) if every account sent at once, ${a.combined.note}`,
    ],
  ];
  if (a.normal) rows.push(['burst, normal', chain(a.normal, promise)]);
  for (const x of a.accounts) {
    if (!x.takeover) continue;
    const t = x.takeover;
    const late =
      t.afterCooldown.oldestEmailAgeSeconds === null
        ? ''
        : `; after a 429 cooldown (${a.failoverAfterSeconds} s before intents move): oldest ${seconds(t.afterCooldown.oldestEmailAgeSeconds)}, ${t.afterCooldown.verdict}`;
    rows.push([`burst, ${x.name} takes over`, `(${t.stopped.join(', ')} stopped) ${chain(t, promise)}${late}`]);
  }
  out.push(...table(rows));
  for (const note of a.notes) out.push(`    * ${note}`);
  for (const assumption of a.assumptions) out.push(`    - ${assumption}`);
  return out;
}

/** What the workers keep in flight, for the sending rate. */
function workers(w: CapacityReport['workload'], emailsPerRequest: number): string {
  const f = inFlightPerWorker(w, emailsPerRequest);
  if (emailsPerRequest === 1) return `${w.deployment.workers} x ${f.requests} sends in flight`;
  return `${w.deployment.workers} x ${f.requests} request(s) in flight x ${rate(f.emails / f.requests)} emails per request`;
}

export function renderReport(r: CapacityReport): string[] {
  const w = r.workload;
  const out: string[] = [];
  const accounts = r.accounts.source === 'flags' ? null : r.accounts;
  const first = r.accounts.accounts[0]!;
  const sending = accounts
    ? `${accounts.accounts.length} account(s), first ${first.name} (${first.provider}) at ${rate(first.emailsPerSecond)} emails/s burst ${int(first.burstEmails)}`
    : singleSending(w, first);
  out.push(
    `leasehold capacity: ${int(w.volume.emailsPerDay)} emails/day from ${int(r.derived.holdsPerDay)} holds/day ` +
      `(${pct(w.volume.expiredShare)} expire, ${seconds(w.holdWindowSeconds)} window), ${sending}, ` +
      `${w.deployment.workers} worker(s)`,
  );

  out.push('', 'Sending rate');
  const s = r.steady;
  out.push(
    ...table([
      ['average demand', `${dec(s.emailsPerSecond, 2)} emails/s`],
      [
        'can send',
        `${dec(s.sendRatePerSecond, 1)}/s, paced by the ${s.pacedBy === 'limiter' ? 'shared limiter' : `workers (${workers(w, first.emailsPerRequest)} / ${w.provider.latencyMs} ms provider latency)`}`,
      ],
      ['verdict', `${s.verdict} (${pct(s.utilisation)} of the sending rate)`],
    ]),
  );

  const b = r.burst;
  out.push('', b ? `Worst burst: ${int(b.holds)} holds falling due ${b.windowSeconds === 0 ? 'at once' : `over ${seconds(b.windowSeconds)}`}` : 'Worst burst: none given (--burst-holds)');
  if (b) {
    const drain =
      b.drainSeconds === null
        ? 'never: the average demand alone uses the whole sending rate'
        : `${seconds(b.drainSeconds)} = (${int(b.holds)} - burst ${int(b.limiterBurst)}) / ${dec(b.drainRatePerSecond, 2)}/s` +
          (b.baselinePerSecond > 0 ? ` (${dec(Math.min(b.limiterPerSecond, b.deliveryCapacityPerSecond), 1)}/s less ${dec(b.baselinePerSecond, 2)}/s of average demand)` : '');
    const age =
      b.oldestEmailAgeSeconds === null
        ? `grows without end against the ${seconds(b.promiseSeconds)} promise: never-drains`
        : `${seconds(b.oldestEmailAgeSeconds)} against the ${seconds(b.promiseSeconds)} promise: ${b.verdict} (${pct(b.oldestEmailAgeSeconds / b.promiseSeconds)} of it)`;
    out.push(
      ...table([
        ['drain time', drain],
        ['last email sent', b.lastSendAtSeconds === null ? 'never' : `${seconds(b.lastSendAtSeconds)} after the burst starts`],
        ['oldest email age', age],
        ['assumes', 'the limiter bucket is full when the burst starts, its holds fall due evenly over the window, average demand keeps arriving'],
        ...b.deadlines.map((d): [string, string] => [
          `${d.kind} deadline`,
          d.verdict === 'meets'
            ? `${seconds(d.deadlineSeconds)}: meets (every email of the burst leaves before it)`
            : `${seconds(d.deadlineSeconds)}: misses (${int(d.missedEmails)} of ${int(b.holds)} emails would wait longer and end missed_deadline, never sent)`,
        ]),
        ['expiry lane', `${dec(b.expiryCatchUpSeconds, 2)}s to expire them all (measured ${int(38_735)} holds/s) against the ${seconds(b.expiryPromiseSeconds)} promise: ${b.expiryVerdict}`],
        ...quotaOverflow(accounts),
      ]),
    );
  }

  const q = r.quota;
  out.push('', 'Daily quota');
  out.push(...table([[q.dailyQuota === null ? 'quota' : `${int(q.emailsPerDay)} of ${int(q.dailyQuota)}`, `${q.verdict}: ${q.note}`]]));

  if (accounts) out.push(...renderAccounts(accounts, w.promiseSeconds));
  else if (r.accounts.notes.length > 0) {
    out.push('', 'Provider accounts: one, from the provider fields');
    for (const note of r.accounts.notes) out.push(`  ${note}`);
  }

  const rows = r.rows;
  out.push('', `Rows and storage (measured bytes per row x ${rows.bloatFactor} for update churn)`);
  out.push(
    ...table([
      ['per day', `${int(rows.perDay.holds)} holds, ${int(rows.perDay.intents)} intents, ${int(rows.perDay.attempts)} attempts = ${bytes(rows.perDay.bytes)}`],
      [
        `at ${rows.atRetention.days} days`,
        `${int(rows.atRetention.holds)} holds, ${int(rows.atRetention.intents)} intents, ${int(rows.atRetention.attempts)} attempts = ${bytes(rows.atRetention.bytes)}`,
      ],
      ['held at any moment', `${int(rows.liveHolds)} holds`],
      ['bytes per row', `hold ${rows.bytesPerRow.hold}, intent ${rows.bytesPerRow.intent}, attempt ${rows.bytesPerRow.attempt} (indexes included)`],
    ]),
  );

  const st = r.statements;
  const rates = (x: { expiry: number; delivery: number; application: number; total: number }) =>
    `${dec(x.total, 1)}/s (expiry ${dec(x.expiry, 1)}, delivery ${dec(x.delivery, 1)}, application ${dec(x.application, 1)})`;
  out.push('', 'Database statements per second');
  out.push(
    ...table([
      ['average', rates(st.average)],
      ...(st.burst
        ? ([
            [
              'worst burst, at its peak',
              `${dec(st.burst.total, 1)}/s (expiry ${dec(st.burst.expiry, 1)} for ${seconds(st.burst.expirySeconds)}, ` +
                `delivery ${dec(st.burst.delivery, 1)} for ${st.burst.seconds === null ? 'ever' : seconds(st.burst.seconds)}, application ${dec(st.burst.application, 1)})`,
            ],
          ] as Array<[string, string]>)
        : []),
    ]),
  );
  for (const a of st.assumptions) out.push(`    - ${a}`);

  out.push('', `Monthly cost, USD (price table recorded ${r.prices.recorded}, ${r.prices.region})`);
  out.push(`  ${r.prices.warning}`);
  for (const design of r.costs) {
    out.push('', `  ${design.name}: ${usd(design.monthlyUsd)} a month`);
    out.push(
      ...table(
        design.lines.map((l) => [
          l.item,
          `${usd(l.usd).padStart(10)}  ${priced(l)}${l.assumption}`,
        ]),
        '    ',
      ),
    );
    for (const note of design.notes) out.push(`      * ${note}`);
  }

  out.push('', 'Prices used (each from its source page, on the date given)');
  out.push(...table(r.prices.used.map((p) => [p.key, `${p.price}  ${p.source === 'none' ? 'no source' : p.source} (${p.taken})`]), '  '));

  out.push('', 'What this model cannot know');
  for (const u of r.unknowns) out.push(`  - ${u}`);
  return out;
}

/**
 * The default: each answer in one line (can it keep up, does the worst
 * burst keep the promise and the deadlines, the quota, the storage, the
 * cost of each design). --detail prints renderReport, every figure with its
 * formula and every price with its source and date.
 */
export function renderSummary(r: CapacityReport): string[] {
  const w = r.workload;
  const b = r.burst;
  const misses = b?.deadlines.filter((d) => d.verdict === 'misses') ?? [];
  const burst = !b
    ? 'none given (--burst-holds)'
    : b.oldestEmailAgeSeconds === null
      ? `${int(b.holds)} holds: never drains`
      : `${int(b.holds)} holds drain in ${b.drainSeconds === null ? 'never' : seconds(b.drainSeconds)}, oldest email ${seconds(b.oldestEmailAgeSeconds)} ` +
        `against the ${seconds(b.promiseSeconds)} promise: ${b.verdict}` +
        (misses.length > 0 ? `; ${misses.map((d) => `${d.kind} deadline misses ${int(d.missedEmails)}`).join(', ')}` : '');
  const cheapest = Math.min(...r.costs.map((d) => d.monthlyUsd));
  return [
    `leasehold capacity: ${int(w.volume.emailsPerDay)} emails/day, ${w.provider.name}, ${w.deployment.workers} worker(s)`,
    ...table([
      ['sending rate', `${r.steady.verdict}: ${dec(r.steady.emailsPerSecond, 2)} emails/s average against ${dec(r.steady.sendRatePerSecond, 1)}/s (${pct(r.steady.utilisation)})`],
      ['worst burst', burst],
      ['daily quota', r.quota.verdict],
      ['storage', `${bytes(r.rows.atRetention.bytes)} at ${r.rows.atRetention.days} days; ${dec(r.statements.average.total, 1)} statements/s on average`],
      ...r.costs.map((d): [string, string] => [d.id === 'leasehold' ? 'cost, this design' : `cost, ${d.id}`, `${usd(d.monthlyUsd)} a month${d.monthlyUsd === cheapest ? ' (cheapest)' : ''}`]),
    ]),
    // What was modelled (an accounts file left out for provider flags, ...) is no detail.
    ...r.accounts.notes.map((note) => `  ${note}`),
    `Prices of ${r.prices.recorded} (${r.prices.region}); --detail for every formula and each price with its source and date.`,
  ];
}
