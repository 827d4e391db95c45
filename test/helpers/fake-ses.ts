import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as sesLocalModule from 'aws-ses-v2-local';
import { FakeHttpServer, type CannedResponse } from './fake-http.js';

/**
 * Two SES v2 stand-ins:
 *
 * - `startSesLocal()` runs aws-ses-v2-local (a community emulator of the SES
 *   v2 SendEmail API) in-process on a free port; `GET /store` lists what it
 *   accepted, headers included.
 * - `sesErrorServer()` answers POST /v2/email/outbound-emails with the
 *   restJson1 error shape the SDK parses: the exception name in the
 *   `x-amzn-ErrorType` header and `{"message": ...}` in the body
 *   (https://smithy.io/2.0/aws/protocols/aws-restjson1-protocol.html#operation-error-serialization).
 */
export interface SesLocal {
  url: string;
  emails(): Promise<Array<{ messageId: string; subject: string; headers?: Array<{ name: string; value: string }>; destination: { to: string[] } }>>;
  stop(): Promise<void>;
}

type StartFn = (config?: { host?: string; port?: number }) => Promise<Server>;

export async function startSesLocal(): Promise<SesLocal> {
  // A CommonJS module with `exports.default`: its default export is the module object.
  const mod = sesLocalModule as unknown as { default: StartFn | { default: StartFn } };
  const start = typeof mod.default === 'function' ? mod.default : mod.default.default;
  const server = await start({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    async emails() {
      const response = await fetch(`${url}/store`);
      return ((await response.json()) as { emails: Awaited<ReturnType<SesLocal['emails']>> }).emails;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** A canned SES v2 error answer. */
export function sesError(status: number, type: string, message: string): CannedResponse {
  return {
    status,
    body: { message },
    headers: { 'x-amzn-ErrorType': `${type}:http://internal.amazon.com/coral/com.amazonaws.sesv2/`, 'x-amzn-RequestId': 'req-1' },
  };
}

/** A server whose every answer is queued by the test (success: `{ MessageId }`). */
export function sesErrorServer(): FakeHttpServer {
  return new FakeHttpServer(() => ({ status: 200, body: { MessageId: `ses-${Date.now()}` } }));
}
