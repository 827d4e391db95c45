import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { packageRoot } from '../../runtime/package-root.js';

/**
 * The chart library's files, served from the installed package (no CDN, no
 * copy in the repository): the dashboard is usable on a network with no way
 * out, and the version is the one package-lock.json pins.
 */
const CHART_ASSETS: Record<string, { file: string; type: string }> = {
  'uPlot.iife.min.js': { file: 'uplot/dist/uPlot.iife.min.js', type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { file: 'uplot/dist/uPlot.min.css', type: 'text/css; charset=utf-8' },
};

/**
 * The operator dashboard: one static page (public/dashboard.html) that reads
 * and acts through /v1 with the operator's token, so it needs no privileges
 * of its own and is served openly.
 */
export function dashboardRoutes(app: FastifyInstance): void {
  let page: Promise<string> | undefined;
  const serve = async (_request: unknown, reply: import('fastify').FastifyReply) => {
    page ??= readFile(path.join(packageRoot(), 'public', 'dashboard.html'), 'utf8');
    return reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
      )
      .header('x-frame-options', 'DENY')
      .send(await page);
  };
  app.get('/', serve);
  app.get('/dashboard', serve);

  const require = createRequire(import.meta.url);
  const assets = new Map<string, Promise<Buffer>>();
  app.get<{ Params: { name: string } }>('/assets/uplot/:name', async (request, reply) => {
    const asset = Object.hasOwn(CHART_ASSETS, request.params.name) ? CHART_ASSETS[request.params.name] : undefined;
    if (!asset) return reply.code(404).send({ error: { code: 'not_found', message: 'no such asset' } });
    let body = assets.get(asset.file);
    if (!body) {
      body = readFile(require.resolve(asset.file));
      assets.set(asset.file, body);
    }
    return reply.type(asset.type).header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(await body);
  });
}
