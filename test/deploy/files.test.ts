import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cliPath } from '../helpers/processes.js';

/**
 * deploy/ (Procfile, systemd units, the environment example) names commands
 * and variables; a rename in the CLI or config.ts must not leave them stale.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const deploy = path.join(root, 'deploy');
const units = readdirSync(path.join(deploy, 'systemd')).map((name) => path.join(deploy, 'systemd', name));
const procfile = readFileSync(path.join(deploy, 'Procfile'), 'utf8');

function sourceText(dir: string): string {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8'))
    .join('\n');
}

/** The subcommands `leasehold --help` lists. */
function cliCommands(): Set<string> {
  const help = execFileSync(process.execPath, [cliPath, '--help'], { encoding: 'utf8' });
  const section = help.slice(help.indexOf('Commands:'));
  return new Set([...section.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!));
}

/** `leasehold.js <command> [args]` invocations in a file. */
function invocations(text: string): string[][] {
  return [...text.matchAll(/leasehold\.js ([a-z-]+)([^\n]*)/g)].map((m) => [m[1]!, ...m[2]!.trim().split(/\s+/).filter(Boolean)]);
}

describe('deploy files', () => {
  it('run only commands and flags the CLI has', () => {
    const commands = cliCommands();
    const all = [...invocations(procfile), ...units.flatMap((unit) => invocations(readFileSync(unit, 'utf8')))];
    expect(all.map((i) => i[0]).sort()).toEqual(expect.arrayContaining(['api', 'delivery-worker', 'expiry-worker', 'prune']));
    for (const [command, ...args] of all) {
      expect(commands, `leasehold ${command}`).toContain(command!);
      // Flags given must parse: --help after them exits 0 only if they do.
      const flags = args.filter((a) => a.startsWith('--'));
      if (flags.length > 0) {
        const run = spawnSync(process.execPath, [cliPath, command!, ...args, '--help'], { encoding: 'utf8' });
        expect(run.status, run.stderr).toBe(0);
      }
    }
  });

  it('set only variables leasehold reads', () => {
    const src = sourceText(path.join(root, 'src'));
    const example = readFileSync(path.join(deploy, 'leasehold.env.example'), 'utf8');
    const names = [...example.matchAll(/^#?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(['DATABASE_URL', 'LEASEHOLD_LISTEN_URL', 'LEASEHOLD_POOL_SIZE', 'LEASEHOLD_LISTEN']));
    for (const name of names) expect(src, name).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it('every systemd unit reads the one environment file and runs the installed CLI', () => {
    for (const unit of units.filter((u) => u.endsWith('.service'))) {
      const text = readFileSync(unit, 'utf8');
      expect(text, unit).toContain('EnvironmentFile=/etc/leasehold/leasehold.env');
      expect(text, unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/leasehold\/bin\/leasehold\.js [a-z-]+/m);
    }
    expect(units.map((u) => path.basename(u))).toEqual(
      expect.arrayContaining(['leasehold-api.service', 'leasehold-expiry@.service', 'leasehold-delivery@.service']),
    );
  });

  const analyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));
  it.skipIf(!analyze)(`systemd-analyze verify accepts every unit${analyze ? '' : ' [SKIPPED: systemd-analyze not installed]'}`, () => {
    const run = spawnSync(analyze!, ['verify', '--man=no', ...units], { encoding: 'utf8' });
    // It cannot see /usr/bin/node everywhere; anything else it says is a mistake in the units.
    const complaints = `${run.stdout}${run.stderr}`
      .split('\n')
      .filter((line) => line.trim() && !/Command \/usr\/bin\/node is not executable/.test(line));
    expect(complaints).toEqual([]);
  });
});
