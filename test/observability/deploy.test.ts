import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { apiHarness, type ApiHarness } from '../helpers/server.js';

/**
 * The alert rules and the dashboard are only worth something if every metric
 * they name is one the service exports: scrape /metrics and check.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

let h: ApiHarness;
let exported: Set<string>;
beforeAll(async () => {
  h = await apiHarness('deploy');
  const scrape = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
  exported = new Set<string>();
  for (const match of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    exported.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exported.add(name + suffix);
  }
});
afterAll(() => h.close());

const metricNames = (text: string) => [...new Set(text.match(/\bleasehold_[a-z0-9_]+\b/g) ?? [])];

function balanced(expr: string): boolean {
  const pairs: Record<string, string> = { ')': '(', '}': '{', ']': '[' };
  const stack: string[] = [];
  for (const ch of expr.replace(/"[^"]*"/g, '')) {
    if ('({['.includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return false;
  }
  return stack.length === 0;
}

describe('the service exports what operators need', () => {
  it('has the gauges of both lanes, the promises and the process counters', () => {
    for (const name of [
      'leasehold_oldest_due_hold_age_seconds',
      'leasehold_due_holds',
      'leasehold_email_backlog',
      'leasehold_oldest_pending_intent_age_seconds',
      'leasehold_intents',
      'leasehold_delivery_paused',
      'leasehold_rate_limit_per_second',
      'leasehold_rate_limit_burst',
      'leasehold_expiry_promise_seconds',
      'leasehold_email_promise_seconds',
      'leasehold_holds_expired_total',
      'leasehold_email_sends_total',
      'leasehold_email_events_total',
      'leasehold_email_bounce_rate',
      'leasehold_email_complaint_rate',
      'leasehold_email_accepted_24h',
      'leasehold_suppressions',
      'leasehold_email_suppressed_total',
      'leasehold_webhook_requests_total',
    ]) {
      expect(exported, name).toContain(name);
    }
  });
});

describe('Node process metrics', () => {
  it('are exported next to leasehold’s own (prom-client defaults, unprefixed)', () => {
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(exported, name).toContain(name);
    }
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  let rules: Rule[];
  beforeAll(async () => {
    const doc = parse(await readFile(path.join(root, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
    rules = doc.groups.flatMap((g) => g.rules);
  });

  it('is a list of well-formed alerting rules', () => {
    expect(rules.length).toBeGreaterThan(5);
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^Leasehold[A-Za-z]+$/);
      expect(typeof rule.expr).toBe('string');
      expect(balanced(rule.expr), rule.expr).toBe(true);
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
      expect(['page', 'warning', 'info']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toBeTruthy();
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('alerts on both lanes’ oldest age against its promise', () => {
    const exprs = rules.map((r) => r.expr);
    expect(exprs.some((e) => e.includes('leasehold_oldest_due_hold_age_seconds') && e.includes('leasehold_expiry_promise_seconds'))).toBe(true);
    expect(exprs.some((e) => e.includes('leasehold_oldest_pending_intent_age_seconds') && e.includes('leasehold_email_promise_seconds'))).toBe(true);
  });

  it('alerts on the complaint and bounce rates, guarded against tiny volumes', () => {
    for (const rate of ['leasehold_email_complaint_rate', 'leasehold_email_bounce_rate']) {
      const matching = rules.filter((r) => r.expr.includes(rate));
      expect(matching.length, rate).toBeGreaterThan(0);
      for (const rule of matching) expect(rule.expr).toContain('leasehold_email_accepted_24h');
      expect(matching.map((r) => r.labels?.severity)).toContain('page');
    }
  });

  it('uses only metrics the service exports', () => {
    for (const rule of rules) {
      const text = [rule.expr, ...Object.values(rule.annotations ?? {})].join('\n');
      for (const name of metricNames(text)) expect(exported, `${rule.alert} uses ${name}`).toContain(name);
    }
  });
});

describe('deploy/grafana/leasehold.json', () => {
  let exprs: string[];
  beforeAll(async () => {
    const dashboard = JSON.parse(await readFile(path.join(root, 'deploy/grafana/leasehold.json'), 'utf8')) as {
      panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
    };
    expect(dashboard.panels.length).toBeGreaterThan(0);
    exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  });

  it('graphs both lanes’ oldest age next to its promise', () => {
    const all = exprs.join('\n');
    for (const name of [
      'leasehold_oldest_due_hold_age_seconds',
      'leasehold_expiry_promise_seconds',
      'leasehold_oldest_pending_intent_age_seconds',
      'leasehold_email_promise_seconds',
      'leasehold_email_backlog',
      'leasehold_email_sends_total',
    ]) {
      expect(all, name).toContain(name);
    }
  });

  it('uses only metrics the service exports, in balanced expressions', () => {
    expect(exprs.length).toBeGreaterThan(10);
    for (const expr of exprs) {
      expect(balanced(expr), expr).toBe(true);
      const names = metricNames(expr);
      expect(names.length, expr).toBeGreaterThan(0);
      for (const name of names) expect(exported, `${expr} uses ${name}`).toContain(name);
    }
  });
});
