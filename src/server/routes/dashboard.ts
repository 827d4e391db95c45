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
 * The page's Content-Security-Policy: nothing inline (no script, no style
 * attribute), nothing from elsewhere, no framing, no form posting anywhere,
 * so text an attacker got into the data (a provider's error, a pause
 * reason) could not run even if it ever became markup.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The page, its own script and styles and its icon (public/), each a file:
 * the CSP allows nothing inline. The icon is an SVG, also at /favicon.ico
 * (what a browser or a tool asks for when the page names none); served
 * under the same CSP, so it could run nothing even if opened as a document.
 */
const PAGE_FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'dashboard.html', type: 'text/html; charset=utf-8' },
  '/dashboard': { file: 'dashboard.html', type: 'text/html; charset=utf-8' },
  '/dashboard.js': { file: 'dashboard.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard.css': { file: 'dashboard.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml; charset=utf-8' },
  '/favicon.ico': { file: 'favicon.svg', type: 'image/svg+xml; charset=utf-8' },
};

/**
 * The operator dashboard: one static page (public/dashboard.html) that reads
 * and acts through /v1 with the operator's token, so it needs no privileges
 * of its own and is served openly. What it shows depends on the token's
 * role (GET /v1/token): a read token gets no controls, and the API refuses
 * them anyway. Its files are not API: `hide` keeps them out of the OpenAPI document.
 */
export function dashboardRoutes(app: FastifyInstance): void {
  const files = new Map<string, Promise<string>>();
  for (const [url, { file, type }] of Object.entries(PAGE_FILES)) {
    app.get(url, { schema: { hide: true } }, async (_request, reply) => {
      let body = files.get(file);
      if (!body) {
        body = readFile(path.join(packageRoot(), 'public', file), 'utf8');
        files.set(file, body);
      }
      return reply
        .type(type)
        .header('content-security-policy', DASHBOARD_CSP)
        .header('x-frame-options', 'DENY')
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .send(await body);
    });
  }

  const require = createRequire(import.meta.url);
  const assets = new Map<string, Promise<Buffer>>();
  app.get<{ Params: { name: string } }>('/assets/uplot/:name', { schema: { hide: true } }, async (request, reply) => {
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
