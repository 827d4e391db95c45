import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as entry from '../../src/index.js';
import { NotFoundError, SchemaNotMigratedError, ValidationError, createLeasehold, silentLogger, SandboxGateway } from '../../src/index.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('arguments');
});
afterAll(() => db.close());

const notADb = { nope: true } as never;

/** Exports that are not called: constants, enums, objects. */
const NOT_CALLABLE = new Set(['BounceType', 'DEFAULTS', 'DEFAULT_RETENTION', 'EventKind', 'HoldStatus', 'INTENT_HEADER', 'IntentState', 'MESSAGE_KINDS', 'RETENTION_TABLES', 'SuppressionReason', 'databaseClock', 'silentLogger']);

/** The error classes: what validation throws, constructed by leasehold itself. */
const ERRORS = new Set(['LeaseholdError', 'ValidationError', 'NotFoundError', 'IdempotencyConflictError', 'HoldNotHeldError', 'IntentStateError', 'ConfigError', 'SchemaNotMigratedError', 'MissingPackageError', 'TemplateRenderError', 'ExpireHookError']);

/** Callable exports that take no arguments, so there is no wrong one to give. */
const NO_ARGUMENTS = new Set(['defaultLibraryLogger']);

type Case = [field: string, call: () => unknown];
const CASES: Record<string, Case[]> = {
  createLeasehold: [
    ['options.pool', () => createLeasehold({} as never)],
    ['options', () => createLeasehold(undefined as never)],
    ['options.schema', () => createLeasehold({ pool: db.pool, schema: 'Not A Schema' })],
    ['options.scheme', () => createLeasehold({ pool: db.pool, scheme: 'x' } as never)],
  ],
  migrate: [['options', () => entry.migrate(db.pool, 'adopt_old' as never)], ['pool', () => entry.migrate(notADb)]],
  getIntent: [['db', () => entry.getIntent(notADb, 'x')], ['id', () => entry.getIntent(db.pool, 5 as never, { schema: db.schema })]],
  listIntents: [['filter.state', () => entry.listIntents(db.pool, { state: 'nope' as never }, { schema: db.schema })]],
  listAttempts: [['intentId', () => entry.listAttempts(db.pool, undefined as never, { schema: db.schema })]],
  getMessage: [['db', () => entry.getMessage(notADb, 'x')]],
  replayIntent: [['options.schema', () => entry.replayIntent(db.pool, 'x', { schema: 5 as never })]],
  getDeliveryControl: [['options.shema', () => entry.getDeliveryControl(db.pool, { shema: db.schema } as never)]],
  pauseDelivery: [['pause.forSeconds', () => entry.pauseDelivery(db.pool, { forSeconds: -1 }, { schema: db.schema })]],
  resumeDelivery: [['db', () => entry.resumeDelivery(notADb)]],
  getRateLimit: [['options', () => entry.getRateLimit(db.pool, 'leasehold' as never)]],
  setRateLimit: [['change.perSecond', () => entry.setRateLimit(db.pool, { perSecond: 0 }, { schema: db.schema })]],
  addSuppression: [['email', () => entry.addSuppression(db.pool, 'not an address', { schema: db.schema })]],
  getSuppression: [['db', () => entry.getSuppression(notADb, 'a@example.com')]],
  removeSuppression: [['options.detail', () => entry.removeSuppression(db.pool, 'a@example.com', { detail: 'x' } as never)]],
  listSuppressions: [['filter.limit', () => entry.listSuppressions(db.pool, { limit: 0 }, { schema: db.schema })]],
  getTenantPolicy: [['tenant', () => entry.getTenantPolicy(db.pool, 5 as never, { schema: db.schema })]],
  listTenantPolicies: [['page.cursor', () => entry.listTenantPolicies(db.pool, { cursor: 5 as never }, { schema: db.schema })]],
  putTenantPolicy: [['options.accounts', () => entry.putTenantPolicy(db.pool, 't', {}, { schema: db.schema, accounts: 'x' as never })]],
  deleteTenantPolicy: [['db', () => entry.deleteTenantPolicy(notADb, 't')]],
  ingestEvents: [['events', () => entry.ingestEvents(db.pool, 'x' as never, { schema: db.schema })]],
  previewRetention: [['policy.retentionDays', () => entry.previewRetention(db.pool, { retentionDays: -1, erasePiiAfterDays: null }, { schema: db.schema })]],
  wakeOnNotify: [['worker', () => entry.wakeOnNotify({} as never, { connectionString: db.url })], ['options.connectionString', () => entry.wakeOnNotify({ wake() {} }, {} as never)], ['options.ownPayload', () => entry.wakeOnNotify({ wake() {} }, { connectionString: db.url, ownPayload: 5 as never })], ['options.ownPayload', () => entry.wakeOnNotify({ wake() {} }, { connectionString: db.url, ownPayload: '' })]],
  createHold: [['db', () => entry.createHold(notADb, { customerEmail: 'a@example.com', ttlSeconds: 60 })]],
  getHold: [['options.schema', () => entry.getHold(db.pool, 'x', { schema: 'pg_catalog' })]],
  confirmHold: [['db', () => entry.confirmHold(notADb, 'x')]],
  cancelHold: [['id', () => entry.cancelHold(db.pool, 5 as never, { schema: db.schema })]],
  extendHold: [['options.clock', () => entry.extendHold(db.pool, 'x', { ttlSeconds: 60 }, { clock: 5 as never })]],
  ExpiryWorker: [
    ['options.pool', () => new entry.ExpiryWorker({} as never)],
    ['options.batchSize', () => new entry.ExpiryWorker({ pool: db.pool, batchSize: 0 })],
    ['options.onExpired', () => new entry.ExpiryWorker({ pool: db.pool, onExpired: 'app.release_slots' as never })],
    ['options.hookTimeoutMs', () => new entry.ExpiryWorker({ pool: db.pool, onExpired: () => {}, hookTimeoutMs: -1 })],
  ],
  DeliveryWorker: [
    ['options.gateway', () => new entry.DeliveryWorker({ pool: db.pool })],
    ['options.gateway', () => new entry.DeliveryWorker({ pool: db.pool, gateway: {} as never })],
    ['options.from', () => new entry.DeliveryWorker({ pool: db.pool, gateway: new SandboxGateway(), from: 'not an address' })],
    ['options.concurrency', () => new entry.DeliveryWorker({ pool: db.pool, gateway: new SandboxGateway(), concurrency: -2 })],
  ],
  loadConfig: [['env', () => entry.loadConfig('LEASEHOLD_RATE_PER_S=5' as never)]],
  createPool: [['options', () => entry.createPool(undefined as never)], ['options.connectionString', () => entry.createPool({} as never)], ['options.max', () => entry.createPool({ connectionString: db.url, max: 0 })]],
  withClient: [['pool', () => entry.withClient(notADb, async () => 1)], ['work', () => entry.withClient(db.pool, undefined as never)]],
  withTransaction: [['pool', () => entry.withTransaction(notADb, async () => 1)], ['work', () => entry.withTransaction(db.pool, 'SELECT 1' as never)]],
  startEmbeddedPostgres: [['options', () => entry.startEmbeddedPostgres(undefined as never)], ['options.port', () => entry.startEmbeddedPostgres({ dataDir: '/tmp/x', port: 70000 })]],
  ManualClock: [['start', () => new entry.ManualClock('yesterday')], ['ms', () => new entry.ManualClock(0).advance('5s' as never)], ['to', () => new entry.ManualClock(0).set({} as never)]],
  Faults: [['hook', () => new entry.Faults('crash' as never)]],
  createLogger: [['options.level', () => entry.createLogger({ level: 'loud' })], ['options.destination', () => entry.createLogger({ destination: 'stderr' as never })]],
  createMetrics: [['registry', () => entry.createMetrics({} as never)]],
  Pruner: [['options.pool', () => new entry.Pruner({ policy: entry.DEFAULT_RETENTION } as never)], ['options.policy', () => new entry.Pruner({ pool: db.pool } as never)]],
  PruneWorker: [['options.policy', () => new entry.PruneWorker({ pool: db.pool } as never)]],
  eraseAddress: [['pool', () => entry.eraseAddress(notADb, 'a@example.com')], ['options.schema', () => entry.eraseAddress(db.pool, 'a@example.com', { schema: 'No Schema' })]],
  eraseTenant: [['pool', () => entry.eraseTenant(notADb, 'acme')], ['options.lockTimeoutMs', () => entry.eraseTenant(db.pool, 'acme', { lockTimeoutMs: -1 })]],
  SandboxGateway: [['options.failRate', () => new entry.SandboxGateway({ failRate: 2 })], ['options.latencyMs', () => new entry.SandboxGateway({ latencyMs: 'slow' as never })]],
  createGateway: [['config', () => entry.createGateway(undefined as never)]],
  loadTemplates: [['options.dir', () => entry.loadTemplates({ dir: 5 as never })]],
  Templates: [['options.files', () => new entry.Templates({ files: 'templates/' as never })]],
  describeProblem: [['problem', () => entry.describeProblem('oops' as never)]],
  emailOutcome: [['events', () => entry.emailOutcome(undefined as never)]],
  addressHash: [['address', () => entry.addressHash(5 as never)]],
  normalizeAddress: [['address', () => entry.normalizeAddress(undefined as never)]],
  intentIdForHold: [['holdId', () => entry.intentIdForHold('' )]],
};

async function failure(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('every export of the package entry checks its arguments', () => {
  it('has a wrong call for every callable export, or is listed as not callable, an error class or taking no arguments', () => {
    const missing = Object.entries(entry)
      .filter(([name, value]) => typeof value === 'function' && !(name in CASES) && !ERRORS.has(name) && !NO_ARGUMENTS.has(name))
      .map(([name]) => name);
    expect(missing).toEqual([]);
    const unknownNonCallable = Object.entries(entry).filter(([name, value]) => typeof value !== 'function' && !NOT_CALLABLE.has(name));
    expect(unknownNonCallable).toEqual([]);
  });

  for (const [name, cases] of Object.entries(CASES)) {
    it(`${name}: a wrong argument is a ValidationError naming it`, async () => {
      for (const [field, call] of cases) {
        const error = await failure(call);
        expect(error, `${name} -> ${field}`).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field, `${name}: ${(error as Error).message}`).toBe(field);
      }
    });
  }
});

describe('the issue', () => {
  it('migrate(pool, "adopt_old"), the 0.1 signature, says so and migrates nothing', async () => {
    const error = await failure(() => entry.migrate(db.pool, 'adopt_old' as never));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toContain('0.1 signature');
  });

  it('a delivery worker without a gateway, or from a non-address, is refused at construction', () => {
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    expect(() => lh.deliveryWorker({})).toThrow(ValidationError);
    expect(() => lh.deliveryWorker({ gateway: new SandboxGateway(), from: 'not an address' })).toThrow(/from/);
    expect(() => lh.deliveryWorker({ gateway: new SandboxGateway(), from: 'Support <support@shop.test>' })).not.toThrow();
  });

  it('lifting a suppression that is not there is NotFoundError', async () => {
    const lh = createLeasehold({ pool: db.pool, schema: db.schema, logger: silentLogger });
    await expect(lh.suppressions.remove('missing@example.com')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('an unmigrated schema is SchemaNotMigratedError, not a raw 42P01', async () => {
    const lh = createLeasehold({ pool: db.pool, schema: `${db.schema}_none`, logger: silentLogger });
    await expect(lh.holds.create({ customerEmail: 'a@example.com', ttlSeconds: 60 })).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(lh.holds.confirm('x')).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(lh.intents.get('x')).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(lh.delivery.get()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(entry.getHold(db.pool, 'x', { schema: `${db.schema}_none` })).rejects.toThrow(/run leasehold migrate/);
  });
});
