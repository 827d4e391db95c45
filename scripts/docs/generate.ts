/**
 * `npm run docs`: writes the generated pages, docs/configuration.md (from
 * the environment schema) and docs/api.md (from the OpenAPI document).
 * test/docs/generated.test.ts renders them again and fails while either
 * file differs.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchOpenApiDocument, renderApiReference } from './api.js';
import { renderConfiguration } from './configuration.js';

export const DOCS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

/** Each generated page: its file under docs/ and its text. */
export async function generatedPages(): Promise<Array<{ file: string; text: string }>> {
  const { document } = await fetchOpenApiDocument();
  return [
    { file: 'configuration.md', text: renderConfiguration() },
    { file: 'api.md', text: renderApiReference(document) },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const page of await generatedPages()) {
    await writeFile(path.join(DOCS_DIR, page.file), page.text);
    process.stdout.write(`wrote docs/${page.file}\n`);
  }
}
