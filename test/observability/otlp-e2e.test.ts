import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { fixture, startNode, type Child } from '../helpers/processes.js';
import { tracingFromEnv } from '../../src/runtime/tracing-sdk.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// `leasehold start` from source (tsx), exporting to an OTLP/HTTP receiver of the test's own.
const cli = fixture('cli-source');
const TOKEN = 'otlp-e2e-token-0123456789abcdef';

interface OtlpSpan {
  name: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  links?: Array<{ traceId: string; spanId: string }>;
}

/** POST /v1/traces: JSON bodies parsed into spans, protobuf bodies counted. */
class Receiver {
  readonly spans: OtlpSpan[] = [];
  protobufBodies = 0;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const type = req.headers['content-type'] ?? '';
        if (type.startsWith('application/json')) {
          const parsed = JSON.parse(body.toString('utf8')) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };
          for (const rs of parsed.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) this.spans.push(...(ss.spans ?? []));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        if (type.startsWith('application/x-protobuf') && body.length > 0) this.protobufBodies++;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        return;
      }
      res.writeHead(404).end();
    });
  });
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const attribute = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

/** Poll until `check` holds, bounded by `tries` (no timed assertion: only how long to keep looking). */
async function eventually(check: () => boolean, tries = 600): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

let db: TestDatabase;
let receiver: Receiver;
let endpoint: string;
beforeAll(async () => {
  db = await testDatabase('otlp_e2e');
  receiver = new Receiver();
  endpoint = await receiver.listen();
});
afterAll(async () => {
  await receiver.close();
  await db.close();
});

async function start(protocol: string): Promise<{ child: Child; url: string }> {
  const child = startNode(cli, ['start', '--host', '127.0.0.1'], {
    ...db.env,
    PORT: '0',
    LEASEHOLD_API_TOKEN: TOKEN,
    EMAIL_PROVIDER: 'sandbox',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_SERVICE_NAME: 'leasehold-e2e',
  });
  const line = await child.waitForLine(/listening on http/, 60_000);
  return { child, url: line.slice(line.indexOf('http')) };
}

async function createHold(url: string, id: string, traceparent: string): Promise<void> {
  const res = await fetch(`${url}/v1/holds`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', traceparent },
    body: JSON.stringify({ id, customerEmail: 'e2e@example.com', ttlSeconds: 1 }),
  });
  expect(res.status).toBe(201);
}

async function stop(child: Child): Promise<void> {
  child.process.kill('SIGTERM');
  const { code } = await child.exited;
  expect(code, child.stderr()).toBe(0);
}

describe('leasehold start exporting OTLP/HTTP', () => {
  it('http/json: the expire, lease, send and record spans of a hold arrive, linked to the traceparent it was created with', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const { child, url } = await start('http/json');
    try {
      await createHold(url, 'e2e-json', `00-${traceId}-00f067aa0ba902b7-01`);
      const linkedTo = (name: string) =>
        receiver.spans.some((s) => s.name === name && (s.links ?? []).some((l) => l.traceId === traceId));
      const sent = await eventually(() => ['expire', 'lease', 'send', 'record'].every(linkedTo));
      expect(sent, JSON.stringify(receiver.spans.map((s) => s.name))).toBe(true);
      const send = receiver.spans.find((s) => s.name === 'send' && attribute(s, 'leasehold.hold.id') === 'e2e-json');
      expect(send).toBeDefined();
      expect(attribute(send!, 'leasehold.intent.id')).toBe('reservation-expired:e2e-json');
      expect(attribute(send!, 'leasehold.outcome')).toBe('accepted');
      expect(JSON.stringify(receiver.spans)).not.toContain('e2e@example.com');
    } finally {
      await stop(child);
    }
  });

  it('http/protobuf: spans arrive as protobuf bodies', async () => {
    const before = receiver.protobufBodies;
    const { child, url } = await start('http/protobuf');
    try {
      await createHold(url, 'e2e-proto', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
      expect(await eventually(() => receiver.protobufBodies > before)).toBe(true);
    } finally {
      await stop(child);
    }
  });
});

describe('the OTEL_* variables', () => {
  it('export nothing unless an endpoint is set; none turns it off; only the http protocols', () => {
    expect(tracingFromEnv({})).toBeUndefined();
    expect(tracingFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toEqual({ url: 'http://c:4318/v1/traces', protocol: 'http/protobuf', serviceName: 'leasehold' });
    expect(
      tracingFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'holds-eu' }),
    ).toEqual({ url: 'http://c:4318/custom', protocol: 'http/json', serviceName: 'holds-eu' });
    expect(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL: .*not "grpc"/);
    expect(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
  });

  it('configured without the SDK installed, leasehold start exits 2 naming the package, before touching a database', async () => {
    const child = startNode(cli, ['start'], {
      NODE_OPTIONS: `--import ${path.join(root, 'test/helpers/fixtures/missing-package.mjs')}`,
      LEASEHOLD_TEST_MISSING_PACKAGE: '@opentelemetry/sdk-trace-base',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    });
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(2);
    expect(child.stderr().trim()).toMatch(/needs the package @opentelemetry\/sdk-trace-base, .*: run npm install @opentelemetry\/sdk-trace-base$/);
  });
});
