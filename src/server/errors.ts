import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HoldNotHeldError, IntentStateError, isConnectionError, LeaseholdError, ValidationError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { isResponseSerializationError } from './validation.js';

/**
 * One error shape for every answer that is not a success:
 * `{"error":{"code","message", field?, status?, state?}}`. Bad input is
 * always a 4xx; only our own faults (or the database being away: 503) are 5xx.
 */

export interface ErrorBody {
  error: { code: string; message: string; field?: string; status?: string; state?: string };
}

/** An HTTP answer decided by a route (auth, unknown route, ...). */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

// Fastify's own client errors, renamed to stable codes.
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_BAD_URL: 'bad_url',
};

export function toErrorResponse(error: unknown): { statusCode: number; body: ErrorBody } {
  if (error instanceof ValidationError) {
    const message = error.message.startsWith(`${error.field}: `) ? error.message : `${error.field}: ${error.message}`;
    return { statusCode: 400, body: { error: { code: error.code, message, field: error.field } } };
  }
  if (error instanceof ApiError) {
    const body: ErrorBody = { error: { code: error.code, message: error.message } };
    if (error.field) body.error.field = error.field;
    return { statusCode: error.statusCode, body };
  }
  if (error instanceof HoldNotHeldError) {
    return { statusCode: 409, body: { error: { code: error.code, message: error.message, status: error.status } } };
  }
  if (error instanceof IntentStateError) {
    return { statusCode: 409, body: { error: { code: error.code, message: error.message, state: error.state } } };
  }
  // Every other error of ours says its own status where it is defined.
  if (error instanceof LeaseholdError) return { statusCode: error.httpStatus, body: { error: { code: error.code, message: error.message } } };
  const e = error as Partial<FastifyError> & { status?: number; type?: string };
  const status = e.statusCode ?? e.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    let code = (e.code && FASTIFY_CODES[e.code]) ?? undefined;
    // A JSON syntax error from the body parser carries 400 and no code.
    if (!code && error instanceof SyntaxError) code = 'invalid_json';
    code ??= status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'bad_request';
    return { statusCode: status, body: { error: { code, message: e.message ?? 'bad request' } } };
  }
  if (isConnectionError(error)) {
    return { statusCode: 503, body: { error: { code: 'database_unavailable', message: 'the database is unreachable; try again' } } };
  }
  return { statusCode: 500, body: { error: { code: 'internal', message: 'internal error' } } };
}

/**
 * The 415 names what was sent and what to send instead (Fastify's own says
 * only "Unsupported Media Type"). The type is cut at its parameters and to a
 * sane length: it is the caller's text.
 */
export function unsupportedMediaType(contentType: string | undefined): ApiError {
  const sent = contentType?.split(';')[0]!.trim().slice(0, 100);
  const message = sent ? `content-type ${sent} is not supported; send application/json` : 'a body needs content-type application/json';
  return new ApiError(415, 'unsupported_media_type', message);
}

/** The 413 says the limit (Fastify's own says only "Request body is too large"): the route's, 512 KiB for webhooks, 64 KiB elsewhere. */
export function payloadTooLarge(limitBytes: number): ApiError {
  const limit = limitBytes % 1024 === 0 ? `${limitBytes / 1024} KiB` : `${limitBytes} bytes`;
  return new ApiError(413, 'payload_too_large', `the body is larger than the limit (${limit})`);
}

/** Fastify's refusals that ours say better, given the request they refused. */
function reworded(error: unknown, request: FastifyRequest): unknown {
  const code = (error as { code?: string } | null)?.code;
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return unsupportedMediaType(request.headers['content-type']);
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return payloadTooLarge(request.routeOptions.bodyLimit);
  return error;
}

export function errorHandler(logger: Logger) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { statusCode, body } = toErrorResponse(reworded(error, request));
    if (statusCode >= 500) {
      // Message, code and stack only: a database error's `detail` can quote row values (a recipient).
      const e = error as { message?: string; code?: string; stack?: string };
      // An answer that does not fit its route's schema: where and why, from the zod issues (never the values).
      const issues = isResponseSerializationError(error) ? error.cause.issues.slice(0, 10).map((issue) => `${issue.path.join('.') || '(answer)'}: ${issue.message}`) : undefined;
      logger.error(
        { event: 'http.error', error: { message: e?.message, code: e?.code, stack: e?.stack, ...(issues ? { issues } : {}) }, method: request.method, route: request.routeOptions?.url },
        'request failed',
      );
    }
    if (statusCode === 401) reply.header('www-authenticate', 'Bearer');
    return reply.code(statusCode).type('application/json; charset=utf-8').send(body);
  };
}

/**
 * Errors Node's HTTP parser raises before there is a request to route: a
 * header block over Node's limit (16 KiB), bytes that are not HTTP, a request
 * that took too long to arrive. They get the same error shape as every other
 * refusal, written straight to the socket since there is no reply object,
 * and the connection is closed (the parser cannot continue on it).
 */
export function clientErrorHandler(logger: Logger) {
  return (error: Error & { code?: string }, socket: Duplex): void => {
    // A reset connection has no one left to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, code, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'header_too_large', 'the request headers are too large']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'request_timeout', 'the request did not arrive in time']
          : [400, 'bad_request', 'the request is not valid HTTP'];
    logger.debug({ event: 'http.client_error', code: error.code ?? null, statusCode: status }, 'request refused by the HTTP parser');
    if (socket.writable) {
      const body = JSON.stringify({ error: { code, message } } satisfies ErrorBody);
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
          `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}
