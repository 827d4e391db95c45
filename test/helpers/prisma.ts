import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * `prisma generate` for a schema, without the network. Prisma 7's client
 * (the `prisma-client` generator with a driver adapter, @prisma/adapter-pg)
 * runs no engine binary at all: its query compiler is WebAssembly shipped in
 * the npm package. But the CLI still wants its schema engine present before
 * any command, and fetches it from Prisma's own binary host, which this
 * machine (and CI) cannot reach; generate never runs it, so when no engine
 * was installed PRISMA_SCHEMA_ENGINE_BINARY points at a stand-in. `prisma
 * migrate` and `db push` do run the schema engine and cannot work here: the
 * schemas of the tests and examples come from SQL instead.
 */
export async function prismaGenerate(schemaFile: string): Promise<void> {
  const engines = path.join(root, 'node_modules/@prisma/engines');
  const hasEngine = existsSync(engines) && readdirSync(engines).some((f) => f.startsWith('schema-engine'));
  const env: NodeJS.ProcessEnv = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1', CHECKPOINT_DISABLE: '1' };
  if (!hasEngine && !env.PRISMA_SCHEMA_ENGINE_BINARY) env.PRISMA_SCHEMA_ENGINE_BINARY = '/bin/true';
  await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/prisma/build/index.js'), 'generate', '--schema', schemaFile], {
    cwd: path.dirname(schemaFile),
    env,
    timeout: 60_000,
  });
}

/** The generated client's module (client.ts in the generator's output), imported at run time: it does not exist before generate, so typecheck never sees it. */
export async function importGenerated<T>(outputDir: string): Promise<T> {
  return (await import(pathToFileURL(path.join(outputDir, 'client.ts')).href)) as T;
}
