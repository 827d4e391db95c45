import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fetchOpenApiDocument, renderApiReference } from '../../scripts/docs/api.js';
import { renderConfiguration } from '../../scripts/docs/configuration.js';
import { ROOT } from '../helpers/docs.js';

/**
 * docs/configuration.md and docs/api.md are generated (scripts/docs/) from
 * the environment schema and the OpenAPI document, so they cannot drift
 * from the code: rendered again here, they must equal the files.
 */
function onDisk(page: string): string {
  return readFileSync(path.join(ROOT, 'docs', page), 'utf8');
}

describe('generated documentation', () => {
  it('docs/configuration.md is what src/config.ts says (run npm run docs)', () => {
    expect(renderConfiguration() === onDisk('configuration.md'), 'docs/configuration.md is stale: run npm run docs').toBe(true);
  });

  it('docs/api.md is what the OpenAPI document says (run npm run docs), read without touching the database', async () => {
    const { document, connections } = await fetchOpenApiDocument();
    expect(connections).toBe(0);
    expect(renderApiReference(document) === onDisk('api.md'), 'docs/api.md is stale: run npm run docs').toBe(true);
  });

  it('documents every environment variable and every route', async () => {
    const configuration = onDisk('configuration.md');
    for (const variable of ['DATABASE_URL', 'LEASEHOLD_RATE_PER_SECOND', 'LEASEHOLD_ERASE_PII_AFTER_DAYS', 'LOG_LEVEL']) expect(configuration).toContain(`| \`${variable}\` |`);
    expect(configuration).not.toContain('## Other');
    const { document } = await fetchOpenApiDocument();
    const api = onDisk('api.md');
    for (const [route, item] of Object.entries(document.paths)) {
      for (const method of Object.keys(item).filter((m) => ['get', 'put', 'post', 'delete', 'patch'].includes(m))) expect(api).toContain(`### ${method.toUpperCase()} ${route}\n`);
    }
  });
});
