import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { packageRoot } from '../../runtime/package-root.js';

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
      .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
      .header('x-frame-options', 'DENY')
      .send(await page);
  };
  app.get('/', serve);
  app.get('/dashboard', serve);
}
