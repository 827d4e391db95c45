import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface BenchChild {
  process: ChildProcess;
  ready: Promise<void>;
  /** Resolves with the count printed on `DONE <n>`. */
  done: Promise<number>;
  /** Resolves with the JSON printed on a `REPORT <json>` line before DONE (undefined if none). */
  report: Promise<unknown>;
  /** Tell the process to start working (it waits for this after READY). */
  go(): void;
  stop(): void;
}

/** Start dist/bench/<script>.js as a child process with `env` added. */
export function startChild(script: string, env: Record<string, string>): BenchChild {
  // BENCH_CHILD_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' profiles the measured processes.
  const nodeArgs = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, path.join(here, `${script}.js`)], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('READY\n')) onReady();
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<number>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      const match = out.match(/DONE (\d+)/);
      if (code === 0 && match) resolve(Number(match[1]));
      else reject(new Error(`${script} exited with ${code ?? signal}: ${err.slice(-2000)}`));
    });
  });
  const report = done.then(() => {
    const line = out.split('\n').find((l) => l.startsWith('REPORT '));
    return line === undefined ? undefined : (JSON.parse(line.slice('REPORT '.length)) as unknown);
  });
  // Callers that only await `done` must not see this rejection as unhandled.
  report.catch(() => {});
  return {
    process: child,
    ready: Promise.race([ready, done.then(() => {})]),
    done,
    report,
    go: () => child.stdin!.write('GO\n'),
    stop: () => child.kill('SIGTERM'),
  };
}
