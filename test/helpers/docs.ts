import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The Markdown a reader of the repository is sent to: README.md, BENCHMARKS.md and every page under docs/ (paths relative to the root). */
export function markdownFiles(): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.md')) pages.push(relative);
    }
  };
  walk('docs');
  return ['README.md', 'BENCHMARKS.md', ...pages.sort()];
}

export interface Fence {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word: `ts`, `sh`, ... ('' when none). */
  lang: string;
  code: string;
  /** Preceded by `<!-- fragment -->`: a snippet shown as a fragment, not checked as a whole program. */
  fragment: boolean;
}

/** Every fenced code block of a Markdown file, indented ones (in list items) included. */
export function fences(file: string): Fence[] {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, marker, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j]!;
      if (line.trim().startsWith(marker!) && line.trim().replace(/[`~]/g, '') === '') break;
      body.push(line.startsWith(indent!) ? line.slice(indent!.length) : line.trimStart());
    }
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    out.push({ file, line: i + 1, lang: lang!.toLowerCase(), code: body.join('\n'), fragment: k >= 0 && lines[k]!.trim() === '<!-- fragment -->' });
    i = j;
  }
  return out;
}
