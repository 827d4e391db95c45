import { z } from 'zod';
import { configSchema } from '../../src/config-schema.js';
import { cell, generatedNotice } from './markdown.js';

/**
 * docs/configuration.md, rendered from the environment's zod schema in
 * src/config.ts: every variable, its default, what it accepts and its
 * `.describe()` text. A variable added to the schema appears here (under
 * "Other" until it is given a group below); `npm run docs` rewrites the page
 * and test/docs/generated.test.ts fails while it is stale.
 */

/** The page's sections, in order. Only the grouping lives here; every fact comes from the schema. */
const GROUPS: ReadonlyArray<{ title: string; variables: readonly string[] }> = [
  {
    title: 'Database',
    variables: ['DATABASE_URL', 'LEASEHOLD_DATA_DIR', 'LEASEHOLD_SCHEMA', 'LEASEHOLD_POOL_SIZE', 'LEASEHOLD_DB_CONNECT_TIMEOUT_MS', 'LEASEHOLD_DB_QUERY_TIMEOUT_MS', 'LEASEHOLD_DB_WAIT_S', 'LEASEHOLD_LISTEN', 'LEASEHOLD_LISTEN_URL'],
  },
  {
    title: 'HTTP API and access',
    variables: ['PORT', 'LEASEHOLD_HOST', 'LEASEHOLD_API_TOKEN', 'LEASEHOLD_API_TOKENS_FILE', 'LEASEHOLD_AUTH_FAILURES_PER_MINUTE', 'LEASEHOLD_AUTH_LOCKOUT_S'],
  },
  {
    title: 'Providers and the shared limiter',
    variables: ['EMAIL_PROVIDER', 'LEASEHOLD_ACCOUNTS_FILE', 'LEASEHOLD_FAILOVER_AFTER_S', 'EMAIL_FROM', 'LEASEHOLD_RATE_PER_SECOND', 'LEASEHOLD_RATE_BURST', 'LEASEHOLD_RATE_UNIT', 'LEASEHOLD_SEND_BATCH'],
  },
  { title: "A hold's emails", variables: ['LEASEHOLD_REMIND_BEFORE_S', 'LEASEHOLD_NOTIFY_ON_CONFIRM', 'LEASEHOLD_NOTICE_DEADLINE_S'] },
  { title: 'Application events', variables: ['LEASEHOLD_EXPIRE_HOOK', 'LEASEHOLD_EXPIRE_HOOK_TIMEOUT_MS'] },
  {
    title: 'The lanes',
    variables: ['LEASEHOLD_EXPIRY_INTERVAL_MS', 'LEASEHOLD_EXPIRY_BATCH', 'LEASEHOLD_LEASE_MS', 'LEASEHOLD_DELIVERY_BATCH', 'LEASEHOLD_DELIVERY_CONCURRENCY', 'LEASEHOLD_HAND_OFF', 'LEASEHOLD_SEND_TIMEOUT_MS', 'LEASEHOLD_MAX_ATTEMPTS'],
  },
  { title: 'Promises and metrics', variables: ['LEASEHOLD_EXPIRY_PROMISE_S', 'LEASEHOLD_EMAIL_PROMISE_S', 'LEASEHOLD_TENANT_METRICS'] },
  {
    title: 'Retention',
    variables: ['LEASEHOLD_RETENTION_DAYS', 'LEASEHOLD_ERASE_PII_AFTER_DAYS', 'LEASEHOLD_AUDIT_RETENTION_DAYS', 'LEASEHOLD_PRUNE_BATCH', 'LEASEHOLD_PRUNE_INTERVAL_MS'],
  },
  {
    title: 'Application webhooks',
    variables: ['LEASEHOLD_WEBHOOK_URL', 'LEASEHOLD_WEBHOOK_SECRET', 'LEASEHOLD_WEBHOOKS_FILE', 'LEASEHOLD_WEBHOOK_TIMEOUT_MS', 'LEASEHOLD_WEBHOOK_GIVE_UP_AFTER_S', 'LEASEHOLD_WEBHOOK_CONCURRENCY'],
  },
  { title: 'Templates', variables: ['LEASEHOLD_TEMPLATES_DIR', 'LEASEHOLD_DEFAULT_LOCALE', 'LEASEHOLD_DEFAULT_TIME_ZONE'] },
  { title: 'Logging', variables: ['LOG_LEVEL'] },
];

interface Property {
  type?: string | string[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
}

function accepts(p: Property): string {
  if (p.enum) return p.enum.map((v) => `\`${String(v)}\``).join(', ');
  const type = [p.type ?? 'string'].flat()[0];
  if (type === 'integer' || type === 'number') {
    const kind = type === 'integer' ? 'whole number' : 'number';
    if (p.minimum !== undefined && p.maximum !== undefined) return `${kind}, ${p.minimum.toLocaleString('en-US')} to ${p.maximum.toLocaleString('en-US')}`;
    if (p.minimum !== undefined) return `${kind}, at least ${p.minimum.toLocaleString('en-US')}`;
    return kind;
  }
  return 'text';
}

function row(name: string, p: Property): string {
  const fallback = p.default === undefined ? 'unset' : `\`${String(p.default)}\``;
  return `| \`${name}\` | ${cell(fallback)} | ${cell(accepts(p))} | ${cell(p.description ?? '')} |`;
}

export function renderConfiguration(): string {
  const document = z.toJSONSchema(configSchema(), { io: 'input', unrepresentable: 'any' }) as { properties: Record<string, Property> };
  const properties = document.properties;
  const grouped = new Set(GROUPS.flatMap((g) => g.variables));
  const groups = [...GROUPS.map((g) => ({ title: g.title, variables: g.variables.filter((v) => v in properties) }))];
  const other = Object.keys(properties).filter((name) => !grouped.has(name));
  if (other.length > 0) groups.push({ title: 'Other', variables: other });

  const out: string[] = [
    '# Configuration',
    '',
    generatedNotice('src/config.ts (the environment schema and its `.describe()` texts)'),
    '',
    'leasehold reads its settings from the environment, once, at start. A bad',
    'value is refused with one line naming the variable and why, and exit code',
    '2. A `LEASEHOLD_*` variable that is not a setting (a typo) is ignored with',
    'one `config.unknown_variable` warning naming it and the setting it is',
    'closest to (`did you mean LEASEHOLD_RATE_PER_SECOND?`). An empty value',
    'counts as unset.',
    '',
    'Each provider reads its own variables (`RESEND_API_KEY`, `SMTP_URL`,',
    '`SANDBOX_*`, ...), listed on its page in [providers](providers/README.md);',
    'tracing reads the standard `OTEL_*` variables ([tracing](tracing.md)).',
    '',
  ];
  for (const group of groups) {
    out.push(`## ${group.title}`, '', '| variable | default | accepts | meaning |', '|---|---|---|---|');
    for (const name of group.variables) out.push(row(name, properties[name]!));
    out.push('');
  }
  return out.join('\n');
}
