import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { fences, markdownFiles, ROOT } from '../helpers/docs.js';

/**
 * Every TypeScript block (```ts) of the README and docs/ compiles against
 * the library as it is: each is a module of its own, with `leasehold`,
 * `leasehold/server`, `leasehold/kysely`, ... mapped to src/ (from
 * package.json's exports), typechecked with the project's compiler options.
 * A block shown as a fragment is preceded by `<!-- fragment -->` and skipped;
 * keep those rare.
 */

/** `leasehold/<sub>` -> src/<file>.ts, read from package.json's exports. */
function packagePaths(): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, { default: string }> };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    paths[name] = [target.default.replace(/^\.\/dist\//, './').replace(/\.js$/, '.ts')];
  }
  return paths;
}

function compileOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true, declaration: false, sourceMap: false, baseUrl: ROOT, paths: packagePaths(), noUnusedLocals: false };
}

describe('TypeScript in the documentation', () => {
  const snippets = markdownFiles()
    .filter((file) => file !== 'BENCHMARKS.md')
    .flatMap((file) => fences(file).filter((f) => (f.lang === 'ts' || f.lang === 'typescript') && !f.fragment))
    .map((fence, i) => ({ fence, file: path.join(ROOT, '.docs-snippets', `${fence.file.replace(/[/.]/g, '_')}_${fence.line}_${i}.ts`) }));

  it('has snippets to check, and a fragment marker is rare', () => {
    const all = markdownFiles().flatMap((file) => fences(file).filter((f) => f.lang === 'ts'));
    expect(snippets.length).toBeGreaterThan(5);
    expect(all.filter((f) => f.fragment).length).toBeLessThanOrEqual(Math.ceil(all.length / 5));
  });

  it('every ```ts block compiles', () => {
    const sources = new Map(snippets.map((s) => [s.file, `${s.fence.code}\nexport {};\n`]));
    const options = compileOptions();
    const host = ts.createCompilerHost(options);
    const { fileExists, readFile, getSourceFile } = host;
    host.fileExists = (file) => sources.has(file) || fileExists.call(host, file);
    host.readFile = (file) => sources.get(file) ?? readFile.call(host, file);
    host.getSourceFile = (file, language, onError, create) =>
      sources.has(file) ? ts.createSourceFile(file, sources.get(file)!, language) : getSourceFile.call(host, file, language, onError, create);
    const program = ts.createProgram([...sources.keys()], options, host);
    const errors: string[] = [];
    for (const { fence, file } of snippets) {
      const source = program.getSourceFile(file)!;
      for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
        const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
        errors.push(`${fence.file}:${fence.line + 1 + line}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
      }
    }
    expect(errors).toEqual([]);
  });
});
