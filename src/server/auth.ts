import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * Bearer-token check for /v1. Both sides are hashed first so the comparison
 * is constant-time and does not leak the token's length.
 */
export function bearerAuth(token: string) {
  if (token.length === 0) throw new Error('an API token is required');
  const expected = digest(token);
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length === 0) {
      throw new ApiError(401, 'unauthorized', 'missing Authorization: Bearer <token> header');
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) {
      throw new ApiError(401, 'unauthorized', 'invalid bearer token');
    }
  };
}
