import { seconds, table } from '../format.js';
import type { CostLine } from './costs.js';
import { inFlightPerWorker, type CapacityReport } from './model.js';

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

export function renderReport(r: CapacityReport): string[] {
  const w = r.workload;
  const out: string[] = [];
  out.push(
    `leasehold capacity: ${int(w.volume.emailsPerDay)} emails/day from ${int(r.derived.holdsPerDay)} holds/day ` +
      `(${pct(w.volume.expiredShare)} expire, ${seconds(w.holdWindowSeconds)} window), ${w.provider.name} at ${w.provider.perSecond}/s burst ${w.provider.burst}, ` +
      `${w.deployment.workers} worker(s)`,
  );

  out.push('', 'Sending rate');
  const s = r.steady;
  out.push(
    ...table([
      ['average demand', `${dec(s.emailsPerSecond, 2)} emails/s`],
      [
        'can send',
        `${dec(s.sendRatePerSecond, 1)}/s, paced by the ${s.pacedBy === 'limiter' ? 'shared limiter' : `workers (${w.deployment.workers} x ${inFlightPerWorker(w)} sends in flight / ${w.provider.latencyMs} ms provider latency)`}`,
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
        ['expiry lane', `${dec(b.expiryCatchUpSeconds, 2)}s to expire them all (measured ${int(38_735)} holds/s) against the ${seconds(b.expiryPromiseSeconds)} promise: ${b.expiryVerdict}`],
      ]),
    );
  }

  const q = r.quota;
  out.push('', 'Daily quota');
  out.push(...table([[q.dailyQuota === null ? 'quota' : `${int(q.emailsPerDay)} of ${int(q.dailyQuota)}`, `${q.verdict}: ${q.note}`]]));

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

  out.push('', 'What this model cannot know');
  for (const u of r.unknowns) out.push(`  - ${u}`);
  return out;
}
