import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedSend } from './tally.js';

/**
 * The "email provider" every contender sends to: a small HTTP server in the
 * parent process, so what was accepted survives every crash of a contender.
 * A send is recorded the moment its request arrives (a real provider has
 * accepted it by then, whether or not the sender lives to read the answer),
 * then `onSend` runs (it may SIGKILL the sender), then the answer goes out
 * after `latencyMs`.
 *
 *   POST /send/<contender>  {"holdId": "...", "possibleDuplicate": false}
 */
export interface SinkOptions {
  latencyMs?: number;
  onSend?: (contender: string, count: number) => void;
}

export interface Sink {
  url: string;
  sends(contender: string): RecordedSend[];
  close(): Promise<void>;
}

export async function startSink(options: SinkOptions = {}): Promise<Sink> {
  const byContender = new Map<string, RecordedSend[]>();
  let receipts = 0;
  const server = http.createServer((request, response) => {
    const match = /^\/send\/([a-z-]+)$/.exec(request.url ?? '');
    if (request.method !== 'POST' || !match) {
      response.writeHead(404).end();
      return;
    }
    const contender = match[1]!;
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      let send: RecordedSend;
      try {
        const parsed = JSON.parse(body) as { holdId?: unknown; possibleDuplicate?: unknown };
        if (typeof parsed.holdId !== 'string') throw new Error('holdId');
        send = { holdId: parsed.holdId, possibleDuplicate: parsed.possibleDuplicate === true };
      } catch {
        response.writeHead(400).end();
        return;
      }
      const list = byContender.get(contender) ?? [];
      list.push(send);
      byContender.set(contender, list);
      options.onSend?.(contender, list.length);
      const receipt = `sink-${++receipts}`;
      setTimeout(() => {
        // The sender may be dead by now; its socket then just closes.
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: receipt }));
      }, options.latencyMs ?? 10);
    });
    request.on('error', () => {});
    response.on('error', () => {});
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sends: (contender) => [...(byContender.get(contender) ?? [])],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Send one "email" to the sink; resolves with the receipt. */
export async function postToSink(
  sinkUrl: string,
  contender: string,
  send: RecordedSend,
  signal?: AbortSignal,
): Promise<string> {
  const response = await fetch(`${sinkUrl}/send/${contender}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(send),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw new Error(`sink answered ${response.status}`);
  return ((await response.json()) as { id: string }).id;
}
