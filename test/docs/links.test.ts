import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { markdownFiles, ROOT } from '../helpers/docs.js';

/**
 * Every relative link of the README, BENCHMARKS.md and docs/ reaches a file
 * that exists, and every `#anchor` a heading there (GitHub's heading slugs),
 * checked offline by remark-validate-links through remark-cli, which reads
 * all the pages together so links into other pages' headings are checked
 * too. Links to other sites are not fetched.
 */
describe('documentation links', () => {
  it('every relative link and anchor resolves', () => {
    const remark = path.join(ROOT, 'node_modules', 'remark-cli', 'cli.js');
    const result = spawnSync(
      process.execPath,
      [remark, '--no-config', '--no-stdout', '--no-color', '--frail', '--quiet', '--use', 'remark-validate-links=repository:false', ...markdownFiles()],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(result.stderr.trim(), 'broken links (file:line:column)').toBe('');
    expect(result.status).toBe(0);
  });

  it('says nothing a reader of the repository cannot see: no issue numbers or work rounds', () => {
    const found: string[] = [];
    const forbidden = [/\bissues? #?\d+/i, /(^|[\s(])#\d+\b/, /\b(this|second|third|fourth) round\b/i, /\bthe issue\b/i, /\bdesign brief\b/i];
    for (const file of markdownFiles()) {
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const pattern of forbidden) if (pattern.test(line)) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
    }
    expect(found).toEqual([]);
  });
});
