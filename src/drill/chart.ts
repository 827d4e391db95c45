import type { DrillPolicy, DrillPromises, DrillSample } from './criteria.js';

/**
 * The drill's chart as one SVG document, written by hand: three stacked
 * panels over the same time axis (backlog; oldest ages against their
 * promises; sends per second against the limit), the paused interval shaded.
 * Pure: the same input gives the same bytes, so tests parse it.
 */

export interface SendsBin {
  /** Start of the 1 s bin, seconds since the drill started. */
  t: number;
  accepted: number;
  /** Every other outcome (rate-limited, failed, rejected, unknown). */
  other: number;
}

export interface DrillChartInput {
  title: string;
  durationS: number;
  pausedFrom: number;
  pausedTo: number;
  samples: DrillSample[];
  sends: SendsBin[];
  policy: DrillPolicy;
  promises: DrillPromises;
}

const WIDTH = 900;
const PANEL_HEIGHT = 170;
const GAP = 46;
const TOP = 62;
const LEFT = 64;
const RIGHT = 190;
const PLOT_WIDTH = WIDTH - LEFT - RIGHT;

export const CHART_COLORS = {
  backlog: '#2563eb',
  pending: '#2563eb',
  due: '#16a34a',
  emailPromise: '#dc2626',
  expiryPromise: '#f59e0b',
  accepted: '#2563eb',
  other: '#9333ea',
  limit: '#dc2626',
  rate: '#6b7280',
  paused: '#fde68a',
} as const;

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

const num = (n: number) => (Math.round(n * 100) / 100).toString();

/** A "nice" step (1, 2 or 5 times a power of ten) giving about `count` ticks up to max. */
export function niceStep(max: number, count = 4): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * power;
}

interface Panel {
  title: string;
  unit: string;
  lines: Array<{ label: string; color: string; points: Array<[number, number]>; step?: boolean }>;
  bars?: Array<{ label: string; color: string; values: Array<[number, number]> }>;
  refs: Array<{ label: string; color: string; value: number }>;
}

function renderPanel(panel: Panel, top: number, input: DrillChartInput, xMax: number): string {
  const values = [
    ...panel.lines.flatMap((l) => l.points.map((p) => p[1])),
    ...panel.refs.map((r) => r.value),
    ...(panel.bars ? stackTotals(panel.bars) : []),
  ];
  const step = niceStep(Math.max(1, ...values) * 1.05);
  const yMax = Math.ceil((Math.max(1, ...values) * 1.05) / step) * step;
  const x = (t: number) => LEFT + (Math.max(0, Math.min(t, xMax)) / xMax) * PLOT_WIDTH;
  const y = (v: number) => top + PANEL_HEIGHT - (Math.max(0, Math.min(v, yMax)) / yMax) * PANEL_HEIGHT;
  const out: string[] = [];
  out.push(`<g class="panel" data-panel="${escapeXml(panel.title)}">`);
  out.push(`<text x="${LEFT}" y="${top - 10}" class="title">${escapeXml(panel.title)}</text>`);
  // The paused interval, behind everything.
  if (input.pausedTo > input.pausedFrom) {
    out.push(
      `<rect class="paused" x="${num(x(input.pausedFrom))}" y="${top}" width="${num(x(input.pausedTo) - x(input.pausedFrom))}" height="${PANEL_HEIGHT}" fill="${CHART_COLORS.paused}" fill-opacity="0.45"/>`,
    );
  }
  // Grid and y axis.
  for (let v = 0; v <= yMax + step / 2; v += step) {
    out.push(`<line class="grid" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${num(y(v))}" y2="${num(y(v))}" stroke="#e5e7eb"/>`);
    out.push(`<text x="${LEFT - 6}" y="${num(y(v) + 4)}" text-anchor="end" class="tick">${num(v)}</text>`);
  }
  out.push(`<text x="14" y="${num(top + PANEL_HEIGHT / 2)}" class="unit" transform="rotate(-90 14 ${num(top + PANEL_HEIGHT / 2)})" text-anchor="middle">${escapeXml(panel.unit)}</text>`);
  // X axis.
  const xStep = niceStep(xMax, 8);
  for (let t = 0; t <= xMax + 1e-9; t += xStep) {
    out.push(`<line x1="${num(x(t))}" x2="${num(x(t))}" y1="${top + PANEL_HEIGHT}" y2="${top + PANEL_HEIGHT + 4}" stroke="#111827"/>`);
    out.push(`<text x="${num(x(t))}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle" class="tick">${num(t)}</text>`);
  }
  out.push(`<line class="axis" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${top + PANEL_HEIGHT}" y2="${top + PANEL_HEIGHT}" stroke="#111827"/>`);
  out.push(`<line class="axis" x1="${LEFT}" x2="${LEFT}" y1="${top}" y2="${top + PANEL_HEIGHT}" stroke="#111827"/>`);
  // Bars (stacked, one per 1 s bin).
  if (panel.bars) {
    const base = new Map<number, number>();
    const barWidth = Math.max(1, PLOT_WIDTH / xMax - 1);
    for (const series of panel.bars) {
      for (const [t, v] of series.values) {
        if (v <= 0) continue;
        const below = base.get(t) ?? 0;
        base.set(t, below + v);
        out.push(
          `<rect class="bar" data-series="${escapeXml(series.label)}" x="${num(x(t))}" y="${num(y(below + v))}" width="${num(barWidth)}" height="${num(y(below) - y(below + v))}" fill="${series.color}"/>`,
        );
      }
    }
  }
  // Lines.
  for (const line of panel.lines) {
    if (line.points.length === 0) continue;
    const d = line.points.map(([t, v], i) => `${i === 0 ? 'M' : 'L'}${num(x(t))},${num(y(v))}`).join(' ');
    out.push(`<path class="series" data-series="${escapeXml(line.label)}" d="${d}" fill="none" stroke="${line.color}" stroke-width="2"/>`);
  }
  // Reference lines: promises and limits.
  for (const ref of panel.refs) {
    out.push(
      `<line class="ref" data-ref="${escapeXml(ref.label)}" data-value="${num(ref.value)}" x1="${LEFT}" x2="${LEFT + PLOT_WIDTH}" y1="${num(y(ref.value))}" y2="${num(y(ref.value))}" stroke="${ref.color}" stroke-width="1.5" stroke-dasharray="6 4"/>`,
    );
  }
  // Legend on the right.
  const legend = [
    ...panel.lines.map((l) => ({ label: l.label, color: l.color, dashed: false })),
    ...(panel.bars ?? []).map((b) => ({ label: b.label, color: b.color, dashed: false })),
    ...panel.refs.map((r) => ({ label: `${r.label} (${num(r.value)})`, color: r.color, dashed: true })),
  ];
  legend.forEach((item, i) => {
    const ly = top + 10 + i * 18;
    const lx = LEFT + PLOT_WIDTH + 12;
    out.push(
      `<line x1="${lx}" x2="${lx + 18}" y1="${ly}" y2="${ly}" stroke="${item.color}" stroke-width="${item.dashed ? 1.5 : 3}"${item.dashed ? ' stroke-dasharray="4 3"' : ''}/>`,
    );
    out.push(`<text x="${lx + 24}" y="${ly + 4}" class="legend">${escapeXml(item.label)}</text>`);
  });
  out.push('</g>');
  return out.join('\n');
}

function stackTotals(bars: NonNullable<Panel['bars']>): number[] {
  const totals = new Map<number, number>();
  for (const series of bars) for (const [t, v] of series.values) totals.set(t, (totals.get(t) ?? 0) + v);
  return [...totals.values()];
}

export function renderDrillChart(input: DrillChartInput): string {
  const xMax = Math.max(1, Math.ceil(input.durationS));
  const points = (pick: (s: DrillSample) => number) => input.samples.map((s) => [s.t, pick(s)] as [number, number]);
  const panels: Panel[] = [
    {
      title: 'Email backlog (pending intents)',
      unit: 'intents',
      lines: [{ label: 'backlog', color: CHART_COLORS.backlog, points: points((s) => s.backlog) }],
      refs: [],
    },
    {
      title: 'Oldest age against the promise',
      unit: 'seconds',
      lines: [
        { label: 'oldest pending', color: CHART_COLORS.pending, points: points((s) => s.oldestPendingAgeS) },
        { label: 'oldest due hold', color: CHART_COLORS.due, points: points((s) => s.oldestDueAgeS) },
      ],
      refs: [
        { label: 'email promise', color: CHART_COLORS.emailPromise, value: input.promises.emailPromiseS },
        { label: 'expiry promise', color: CHART_COLORS.expiryPromise, value: input.promises.expiryPromiseS },
      ],
    },
    {
      title: 'Sends per second (attempts started) against the limit',
      unit: 'sends/s',
      lines: [],
      bars: [
        { label: 'accepted', color: CHART_COLORS.accepted, values: input.sends.map((b) => [b.t, b.accepted] as [number, number]) },
        { label: 'other outcomes', color: CHART_COLORS.other, values: input.sends.map((b) => [b.t, b.other] as [number, number]) },
      ],
      refs: [
        { label: 'burst + rate', color: CHART_COLORS.limit, value: input.policy.burst + input.policy.perSecond },
        { label: 'rate', color: CHART_COLORS.rate, value: input.policy.perSecond },
      ],
    },
  ];
  const height = TOP + panels.length * (PANEL_HEIGHT + GAP) + 10;
  const body = panels.map((panel, i) => renderPanel(panel, TOP + i * (PANEL_HEIGHT + GAP), input, xMax)).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    '<style>.title{font-size:13px;font-weight:bold}.tick{fill:#374151}.legend{fill:#111827}.unit{fill:#374151}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="20" font-size="15" font-weight="bold">${escapeXml(input.title)}</text>`,
    `<text x="${WIDTH - RIGHT}" y="20" text-anchor="end" class="tick">seconds since the drill started; shaded: delivery paused</text>`,
    body,
    '</svg>',
    '',
  ].join('\n');
}
