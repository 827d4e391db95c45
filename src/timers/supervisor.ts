import { spawn, type ChildProcess } from 'node:child_process';

export interface SupervisorOptions {
  script: string;
  /** Arguments for a process's start number (1 for the first). */
  args: (start: number) => string[];
  env: Record<string, string | undefined>;
  /** A crashed process is started again after this long, like a process manager would. */
  restartDelayMs?: number;
  /** Called when a process prints READY, with its start number. */
  onReady?: (start: number) => void;
}

/**
 * Keeps one contender process running: starts it, SIGKILLs it on request,
 * starts it again. Counts starts and kills, keeps the tail of stderr.
 */
export class Supervisor {
  starts = 0;
  kills = 0;
  /** Exits nobody asked for (the contender crashed on its own). */
  unexpectedExits = 0;
  private child: ChildProcess | undefined;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private stderrTail = '';

  constructor(private readonly options: SupervisorOptions) {}

  start(): void {
    if (this.stopped) return;
    const start = ++this.starts;
    const child = spawn(process.execPath, [this.options.script, ...this.options.args(start)], {
      env: { ...this.options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      if (out.includes('READY\n')) return;
      out += d.toString();
      if (out.includes('READY\n')) this.options.onReady?.(start);
    });
    child.stderr!.on('data', (d: Buffer) => (this.stderrTail = (this.stderrTail + d.toString()).slice(-2000)));
    child.on('exit', (_code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.stopped) return;
      if (signal !== 'SIGKILL') this.unexpectedExits++;
      this.restartTimer = setTimeout(() => this.start(), this.options.restartDelayMs ?? 200);
    });
    child.on('error', () => {});
  }

  /**
   * A real crash: SIGKILL, no cleanup runs. The exit handler restarts it.
   * With `start`, only if that process is still the one running.
   */
  kill(start?: number): void {
    if (this.stopped || !this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (start !== undefined && start !== this.starts) return;
    this.kills++;
    this.child.kill('SIGKILL');
  }

  /** End for good (SIGKILL: the contender keeps nothing worth a graceful stop). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  stderr(): string {
    return this.stderrTail;
  }
}
