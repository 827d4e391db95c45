import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { ident } from '../../src/db/pool.js';
import { ValidationError } from '../../src/errors.js';
import { testDatabase, type TestDatabase } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';

// `db` gives a connection to the shared server; the schemas under test are
// other, unmigrated ones.
let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase('cli_schema');
});
afterAll(() => db.close());

const freshName = () => `typo_${randomBytes(4).toString('hex')}`;

async function schemaExists(name: string): Promise<boolean> {
  const { rows } = await db.pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name]);
  return rows.length > 0;
}

async function tablesIn(name: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ relname: string }>(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1`,
    [name],
  );
  return rows.map((r) => r.relname);
}

describe('commands that read never migrate', () => {
  it('status, trace, pause and rate-limit against a schema without leasehold tables exit 2 and create nothing', async () => {
    // One command of each kind (the operator commands share one path); run
    // at once, each on its own schema name, to keep the file quick. Several
    // CLI processes at once: a longer timeout for a loaded machine.
    const commands = [['status'], ['trace', 'some-hold'], ['pause', '--reason', 'typo'], ['rate-limit', '--per-second', '5']];
    await Promise.all(
      commands.map(async (args) => {
        const schema = freshName();
        try {
          const res = await runCli(args, { ...db.env, LEASEHOLD_SCHEMA: schema });
          expect(res.code, args[0]).toBe(2);
          expect(res.stderr.trim()).toBe(`leasehold: schema ${schema} has no leasehold tables; run leasehold migrate`);
          expect(res.stdout).toBe('');
          expect(await schemaExists(schema)).toBe(false);
        } finally {
          await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
        }
      }),
    );
  }, 120_000);

  it('a schema not fully migrated is refused as such, and left as it was', async () => {
    const schema = freshName();
    const s = ident(schema);
    await db.pool.query(`CREATE SCHEMA ${s}`);
    try {
      await db.pool.query(`CREATE TABLE ${s}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await db.pool.query(`INSERT INTO ${s}.migrations (id, name) VALUES (1, '0001_holds')`);
      const res = await runCli(['status'], { ...db.env, LEASEHOLD_SCHEMA: schema });
      expect(res.code).toBe(2);
      expect(res.stderr.trim()).toMatch(new RegExp(`^leasehold: schema ${schema} is not fully migrated \\(1 of \\d+ migrations applied\\); run leasehold migrate$`));
      expect(await tablesIn(schema)).toEqual(['migrations']);
    } finally {
      await db.pool.query(`DROP SCHEMA ${s} CASCADE`);
    }
  });

  it('`migrate` creates the schema, and `status` then reads it', async () => {
    const schema = freshName();
    try {
      const migrated = await runCli(['migrate'], { ...db.env, LEASEHOLD_SCHEMA: schema });
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(migrated.stdout).toMatch(new RegExp(`^schema ${schema} is at \\d{4}_\\w+`));
      const status = await runCli(['status'], { ...db.env, LEASEHOLD_SCHEMA: schema });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain('overall: ok');
    } finally {
      await db.pool.query(`DROP SCHEMA IF EXISTS ${ident(schema)} CASCADE`);
    }
  }, 120_000);

  it('without DATABASE_URL, `status` does not initialise an embedded cluster', async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'leasehold-nodata-'));
    try {
      const dataDir = path.join(parent, 'data');
      const env = { ...db.env, DATABASE_URL: '', LEASEHOLD_DATA_DIR: dataDir };
      const res = await runCli(['status'], env);
      expect(res.code).toBe(2);
      expect(res.stderr.trim()).toBe(
        `leasehold: no embedded database under ${dataDir} (LEASEHOLD_DATA_DIR); run leasehold migrate, or set DATABASE_URL`,
      );
      expect(await readdir(parent)).toEqual([]);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('reserved schema names', () => {
  it('LEASEHOLD_SCHEMA=information_schema, pg_catalog or pg_temp exits 2 with one configuration line and creates nothing', async () => {
    const cases = [
      ['information_schema', 'migrate'],
      ['pg_catalog', 'status'],
      ['pg_temp', 'start'],
    ] as const;
    const ours = ['migrations', 'support_reservations', 'email_outbox', 'email_attempts', 'rate_limiter', 'delivery_control'];
    try {
      await Promise.all(
        cases.map(async ([schema, command]) => {
          const res = await runCli([command], { ...db.env, LEASEHOLD_SCHEMA: schema });
          expect(res.code, `${schema} ${command}`).toBe(2);
          expect(res.stderr.trim()).toBe(
            `leasehold: invalid configuration: LEASEHOLD_SCHEMA: must not be a PostgreSQL system schema (pg_* or information_schema) (got "${schema}")`,
          );
        }),
      );
      expect((await tablesIn('information_schema')).filter((t) => ours.includes(t))).toEqual([]);
    } finally {
      // On a regression, leave the shared server's information_schema as it was.
      for (const table of ours) await db.pool.query(`DROP TABLE IF EXISTS information_schema.${ident(table)} CASCADE`);
    }
  }, 120_000);

  it("the library's migrate() refuses them too", async () => {
    await expect(migrate(db.pool, 'information_schema')).rejects.toThrow(ValidationError);
    await expect(migrate(db.pool, 'pg_temp')).rejects.toThrow('PostgreSQL system schema');
  });

  it('`demo --schema` refuses a pg_ name', async () => {
    const res = await runCli(['demo', '--schema', 'pg_x_demo'], db.env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('not starting with pg_');
  });
});
