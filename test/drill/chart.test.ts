import { describe, expect, it } from 'vitest';
import { CHART_COLORS, niceStep, renderDrillChart, type DrillChartInput } from '../../src/drill/chart.js';
import { findAll, parseXml, type XmlElement } from '../helpers/xml.js';

function input(overrides: Partial<DrillChartInput> = {}): DrillChartInput {
  return {
    title: 'leasehold drill <script>alert(1)</script> & "friends"',
    durationS: 12,
    pausedFrom: 0.2,
    pausedTo: 5,
    samples: Array.from({ length: 11 }, (_, k) => ({
      t: k + 1,
      paused: k + 1 < 5,
      backlog: k < 2 ? 0 : Math.max(0, 12 - 5 * Math.max(0, k - 4)),
      oldestPendingAgeS: k < 2 ? 0 : k,
      dueHolds: 0,
      oldestDueAgeS: 0.1,
    })),
    sends: Array.from({ length: 12 }, (_, t) => ({ t, accepted: t >= 5 && t < 8 ? 5 : 0, other: t === 6 ? 1 : 0 })),
    policy: { perSecond: 5, burst: 2 },
    promises: { expiryPromiseS: 5, emailPromiseS: 2 },
    ...overrides,
  };
}

const panels = (svg: XmlElement) => findAll(svg, (e) => e.attrs.class === 'panel');

describe('drill chart (SVG)', () => {
  it('is one well-formed SVG document with three panels over one time axis', () => {
    const svg = parseXml(renderDrillChart(input()));
    expect(svg.name).toBe('svg');
    expect(svg.attrs.xmlns).toBe('http://www.w3.org/2000/svg');
    expect(panels(svg).map((p) => p.attrs['data-panel'])).toEqual([
      'Email backlog (pending intents)',
      'Oldest age against the promise',
      'Sends per second (attempts started) against the limit',
    ]);
    // The paused interval is shaded in each panel.
    expect(findAll(svg, (e) => e.attrs.class === 'paused')).toHaveLength(3);
  });

  it('keeps text as text: the title is escaped, never markup', () => {
    const source = renderDrillChart(input());
    expect(source).not.toContain('<script>');
    const svg = parseXml(source);
    expect(findAll(svg, (e) => e.name === 'script')).toHaveLength(0);
    expect(findAll(svg, (e) => e.text === 'leasehold drill <script>alert(1)</script> & "friends"')).toHaveLength(1);
  });

  it('draws backlog and both oldest ages as lines with the promises as reference lines', () => {
    const svg = parseXml(renderDrillChart(input()));
    const [backlog, ages] = panels(svg) as [XmlElement, XmlElement];
    expect(findAll(backlog, (e) => e.attrs.class === 'series').map((e) => e.attrs['data-series'])).toEqual(['backlog']);
    const lines = findAll(ages, (e) => e.attrs.class === 'series');
    expect(lines.map((e) => e.attrs['data-series'])).toEqual(['oldest pending', 'oldest due hold']);
    // One vertex per sample.
    expect(lines[0]!.attrs.d!.split(' ')).toHaveLength(11);
    const refs = findAll(ages, (e) => e.attrs.class === 'ref');
    expect(refs.map((e) => [e.attrs['data-ref'], e.attrs['data-value'], e.attrs.stroke])).toEqual([
      ['email promise', '2', CHART_COLORS.emailPromise],
      ['expiry promise', '5', CHART_COLORS.expiryPromise],
    ]);
  });

  it('draws sends per second as stacked bars against the limit burst + rate, at the right height', () => {
    const svg = parseXml(renderDrillChart(input()));
    const sends = panels(svg)[2]!;
    const bars = findAll(sends, (e) => e.attrs.class === 'bar');
    expect(bars.filter((b) => b.attrs['data-series'] === 'accepted')).toHaveLength(3);
    expect(bars.filter((b) => b.attrs['data-series'] === 'other outcomes')).toHaveLength(1);
    const [limit, rate] = findAll(sends, (e) => e.attrs.class === 'ref');
    expect([limit!.attrs['data-ref'], limit!.attrs['data-value']]).toEqual(['burst + rate', '7']);
    expect([rate!.attrs['data-ref'], rate!.attrs['data-value']]).toEqual(['rate', '5']);
    // A bar of 5 reaches exactly the rate line; the stacked 5 + 1 goes above it, under the limit.
    const accepted5 = bars.find((b) => b.attrs['data-series'] === 'accepted')!;
    expect(Number(accepted5.attrs.y)).toBeCloseTo(Number(rate!.attrs.y1), 1);
    const other = bars.find((b) => b.attrs['data-series'] === 'other outcomes')!;
    expect(Number(other.attrs.y)).toBeGreaterThan(Number(limit!.attrs.y1));
    expect(Number(other.attrs.y)).toBeLessThan(Number(rate!.attrs.y1));
  });

  it('renders an empty run (no samples, no sends) without NaN', () => {
    const source = renderDrillChart(input({ samples: [], sends: [], durationS: 0 }));
    expect(source).not.toContain('NaN');
    expect(panels(parseXml(source))).toHaveLength(3);
  });

  it('picks round tick steps', () => {
    expect(niceStep(10, 4)).toBe(5);
    expect(niceStep(7, 4)).toBe(2);
    expect(niceStep(900, 4)).toBe(500);
    expect(niceStep(0)).toBe(1);
  });
});
