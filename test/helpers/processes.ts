import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const up = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// Compiled into dist/test/helpers/ when a bench script uses it: the root is one further up.
const root = path.basename(up) === 'dist' ? path.dirname(up) : up;

/**
 * Path of a child-process fixture's TypeScript source (test/helpers/fixtures/).
 * startNode runs .ts files through tsx, so a fixture runs the code under
 * test as it is now, with or without a prior `tsc`.
 */
export function fixture(name: string): string {
  return path.join(root, 'test', 'helpers', 'fixtures', `${name}.ts`);
}

/**
 * The shipped command, bin/leasehold.js, which loads dist/src/: tests that
 * spawn it test the built package, so they need a build first (`npm test`
 * runs tsc before vitest; after `npx vitest` alone they run the last build).
 */
export const cliPath = path.join(root, 'bin', 'leasehold.js');

export interface Child {
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the first stdout line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Start `script` with this Node; a .ts script runs from source through tsx. */
export function startNode(script: string, args: string[], env: Record<string, string>): Child {
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...loader, script, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.pattern.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    process: child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForLine(pattern, timeoutMs = 20_000) {
      const line = out.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${pattern}; stdout: ${out.slice(-500)} stderr: ${err.slice(-1500)}`)),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
        exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`process exited before ${pattern}; stderr: ${err.slice(-1500)}`));
        });
      });
    },
  };
}

/** SIGKILL: a real crash, no cleanup code runs. */
export async function kill9(child: Child): Promise<void> {
  child.process.kill('SIGKILL');
  await child.exited;
}
