import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One real PostgreSQL for the whole run: the embedded server in a temporary
 * directory, or the server named by LEASEHOLD_TEST_DATABASE_URL (for example
 * postgres://postgres@127.0.0.1:5432/test). Each test file then works in a
 * schema of its own (see database.ts).
 */
export default async function setup(project: TestProject) {
  const external = process.env.LEASEHOLD_TEST_DATABASE_URL;
  if (external) {
    project.provide('databaseUrl', external);
    return;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'leasehold-test-'));
  const server = await startEmbeddedPostgres({ dataDir: dir });
  project.provide('databaseUrl', server.url);
  return async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  };
}
