import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILD_STAMP, staleReason } from '../../scripts/build.mjs';

/**
 * `npm start`, `npm test` and the bench scripts build first through
 * scripts/build.mjs, which runs tsc only when an input is newer than the
 * last build: the decision, on a tree of its own with its times set.
 */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'leasehold-build-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const at = (file: string, seconds: number) => utimes(path.join(root, file), seconds, seconds);

async function tree(): Promise<void> {
  for (const dir of ['src/cli', 'bench', 'test', 'dist/src/cli']) await mkdir(path.join(root, dir), { recursive: true });
  for (const file of ['src/cli/main.ts', 'src/index.ts', 'bench/run.ts', 'test/a.test.ts', 'tsconfig.json', 'package.json', 'package-lock.json', 'dist/src/cli/main.js', 'dist/src/index.js']) {
    await writeFile(path.join(root, file), '');
  }
  for (const file of ['src/cli/main.ts', 'src/cli', 'src/index.ts', 'src', 'bench/run.ts', 'bench', 'test/a.test.ts', 'test', 'tsconfig.json', 'package.json', 'package-lock.json']) await at(file, 1_000);
}

describe('scripts/build.mjs decides when to build', () => {
  it('builds a clean clone, then not again until a source, the tsconfig or the lockfile changes', async () => {
    await tree();
    expect(staleReason(root)).toBe('no build yet');
    await writeFile(path.join(root, BUILD_STAMP), '');
    await at(BUILD_STAMP, 2_000);
    expect(staleReason(root)).toBeUndefined();

    await at('src/cli/main.ts', 3_000);
    expect(staleReason(root)).toBe('src changed');
    await at(BUILD_STAMP, 4_000);
    expect(staleReason(root)).toBeUndefined();

    await at('tsconfig.json', 5_000);
    expect(staleReason(root)).toBe('tsconfig.json changed');
    await at(BUILD_STAMP, 6_000);

    // A source deleted changes only its folder.
    await at('test', 7_000);
    expect(staleReason(root)).toBe('test changed');
    await at(BUILD_STAMP, 8_000);
    expect(staleReason(root)).toBeUndefined();
  });

  it('builds again when an output is gone, whatever the times say', async () => {
    await rm(path.join(root, 'dist/src/index.js'));
    expect(staleReason(root)).toBe('dist/src/index.js is missing');
  });
});
