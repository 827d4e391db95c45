import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { fences, markdownFiles } from '../helpers/docs.js';

/**
 * Every `leasehold ...` command shown in a shell block of the README,
 * BENCHMARKS.md or docs/ exists in the CLI as built (buildProgram, the
 * commander tree `--help` prints), with every `--flag` it uses: a renamed
 * command or flag fails here, not in a reader's terminal.
 */
const SHELL = new Set(['sh', 'bash', 'console', 'shell', 'zsh']);

/** A shell line's words, quotes removed, usage brackets dropped, stopping at a comment or a redirection. */
function words(line: string): string[][] {
  const commands: string[][] = [[]];
  let word = '';
  let quote: string | undefined;
  let brackets = 0;
  let hasWord = false;
  const end = () => {
    if (hasWord) commands[commands.length - 1]!.push(word);
    word = '';
    hasWord = false;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      hasWord = true;
    } else if (c === '[') brackets++;
    else if (c === ']') brackets = Math.max(0, brackets - 1);
    else if (c === '#' && !hasWord) break;
    else if (c === ' ' || c === '\t') end();
    else if ((c === '|' || c === ';' || c === '&') && brackets === 0) {
      end();
      if (line[i + 1] === c) i++;
      commands.push([]);
    } else if (c === '|') end(); // `[--hold <id> | --sample]`: alternatives of one usage line
    else if (c === '<' && /^<[^<>\s]+>/.test(line.slice(i))) {
      const placeholder = /^<[^<>\s]+>/.exec(line.slice(i))![0];
      word += placeholder; // <holdId>, not a redirection
      hasWord = true;
      i += placeholder.length - 1;
    } else if (c === '>' || c === '<') {
      if (/^\d$/.test(word)) hasWord = false; // 2>&1
      end();
      break;
    } else {
      word += c;
      hasWord = true;
    }
  }
  end();
  return commands.filter((c) => c.length > 0);
}

/** The `leasehold` invocations of a shell block, each as its arguments after `leasehold`. */
function invocations(code: string): string[][] {
  const out: string[][] = [];
  for (const raw of code.replace(/\\\n/g, ' ').split('\n')) {
    const line = raw.replace(/^\s*\$\s+/, '');
    for (let command of words(line)) {
      while (command.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(command[0]!)) command = command.slice(1);
      if (command[0] === 'npx') command = command.slice(1);
      if (command[0] === 'leasehold') out.push(command.slice(1));
    }
  }
  return out;
}

/** What is wrong with `leasehold <args>` against the program, if anything. */
function problems(program: Command, args: string[]): string[] {
  const found: string[] = [];
  let command = program;
  const path = ['leasehold'];
  let positional = 0;
  const optionNames = (c: Command) => c.options.flatMap((o) => [o.long, o.short].filter((n): n is string => n !== undefined));
  const known = new Set([...optionNames(program), '--help', '-h']);
  for (const arg of args) {
    if (arg === '--') break;
    if (arg.startsWith('-')) {
      const flag = arg.split('=')[0]!;
      if (!known.has(flag)) found.push(`${path.join(' ')}: no option ${flag}`);
      continue;
    }
    if (/^<.*>$|^\.\.\.$|^[A-Z]+$/.test(arg)) {
      positional++;
      continue; // a placeholder: <name>, N
    }
    const sub = positional === 0 ? command.commands.find((c) => c.name() === arg || c.aliases().includes(arg)) : undefined;
    if (sub) {
      command = sub;
      path.push(arg);
      for (const name of optionNames(sub)) known.add(name);
      continue;
    }
    if (positional === 0 && command.commands.length > 0 && command.registeredArguments.length === 0) {
      found.push(`${path.join(' ')}: no command ${arg}`);
      break;
    }
    positional++;
  }
  if (command === program && args.every((a) => !a.startsWith('-'))) found.push('leasehold: no command given');
  return found;
}

describe('CLI commands in the documentation', () => {
  const program = buildProgram(() => {
    throw new Error('the documentation check runs no command');
  });
  const shown = markdownFiles().flatMap((file) =>
    fences(file)
      .filter((f) => SHELL.has(f.lang))
      .flatMap((f) => invocations(f.code).map((args) => ({ where: `${f.file}:${f.line}`, args }))),
  );

  it('finds the commands it checks', () => {
    expect(shown.length).toBeGreaterThan(20);
    expect(problems(program, ['pause', '--reason', 'x', '--for', '60'])).toEqual([]);
    expect(problems(program, ['pause', '--four', '60'])).toEqual(['leasehold pause: no option --four']);
    expect(problems(program, ['tenants', 'sho', 'acme'])).toEqual(['leasehold tenants: no command sho']);
    expect(invocations('FOO=1 npx leasehold prune --dry-run  # comment\nopenssl rand -base64 32 | npx leasehold tokens hash')).toEqual([['prune', '--dry-run'], ['tokens', 'hash']]);
  });

  it('names only commands and flags the CLI has', () => {
    const wrong = shown.flatMap(({ where, args }) => problems(program, args).map((p) => `${where}: ${p} (leasehold ${args.join(' ')})`));
    expect(wrong).toEqual([]);
  });
});
