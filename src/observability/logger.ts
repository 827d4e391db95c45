import { createRequire } from 'node:module';
import type { DestinationStream, Logger, pino as Pino } from 'pino';
import { ValidationError } from '../errors.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

// pino is loaded when the first logger is made, and pino-pretty only for a
// person's terminal, not when the library is imported (BENCHMARKS.md, import time).
const require = createRequire(import.meta.url);
const loadPino = () => (require('pino') as { pino: typeof Pino }).pino;

export type { Logger };

/**
 * One JSON event per state transition, named in `event` (`hold.expired`,
 * `intent.accepted`, ...) and joinable by holdId, intentId and attempt.
 * Recipient addresses and message bodies are never logged: the redact list
 * is a second line of defence behind not passing them in the first place.
 */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream; pretty?: boolean } = {}): Logger {
  if (typeof options !== 'object' || options === null) throw new ValidationError('options', 'must be an object like { level, destination }');
  if (options.level !== undefined && !LEVELS.includes(options.level)) throw new ValidationError('options.level', `must be one of ${LEVELS.join(', ')}`);
  if (options.destination !== undefined && typeof (options.destination as { write?: unknown })?.write !== 'function') {
    throw new ValidationError('options.destination', 'must be a writable stream (an object with a write function)');
  }
  const destination = options.destination ?? process.stdout;
  const pino = loadPino();
  return pino(
    {
      name: 'leasehold',
      level: options.level ?? 'info',
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['recipient', 'customerEmail', 'customer_email', 'to', 'html', 'text', 'body', '*.recipient', '*.customerEmail'],
        censor: '[redacted]',
      },
    },
    (options.pretty ? prettyStream(destination) : destination) as DestinationStream,
  );
}

/**
 * The same events for a person at a terminal: one coloured line each, local
 * time, the event's fields after it. Redaction has happened before this.
 */
function prettyStream(destination: NodeJS.WritableStream) {
  const { PinoPretty } = require('pino-pretty') as typeof import('pino-pretty');
  return PinoPretty({
    destination,
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
    messageKey: 'msg',
    singleLine: true,
  });
}

/** JSON for machines (a pipe, a file, a log collector); human-readable when a person watches the stream. */
export function wantsPrettyLogs(stream: { isTTY?: boolean }): boolean {
  return stream.isTTY === true;
}

/**
 * A logger that drops everything: pass it as `logger` for a silent worker.
 * Every worker defaults to it, so it is made (and pino loaded) when first
 * touched; until then it stands in for that pino logger, forwarding everything.
 */
export const silentLogger: Logger = madeOnFirstUse(() => loadPino()({ level: 'silent' }));

function madeOnFirstUse<T extends object>(make: () => T): T {
  let made: T | undefined;
  const target = () => (made ??= make());
  // An object made from it (pino's child() is Object.create(this)) keeps itself as `this`.
  const self = (receiver: unknown) => (receiver === proxy ? target() : receiver);
  const proxy: T = new Proxy({} as T, {
    get: (_, key, receiver) => Reflect.get(target(), key, self(receiver)),
    set: (_, key, value, receiver) => Reflect.set(target(), key, value, self(receiver)),
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      // A proxy may not report a property its (empty) target lacks as non-configurable.
      return descriptor && { ...descriptor, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
  return proxy;
}

let libraryLogger: Logger | undefined;

/**
 * What a worker or client logs to when the application gives no logger:
 * warnings and errors (a provider pause, a dead intent, a lost connection,
 * the example sender), JSON lines on stderr. Info events need a logger of
 * the application's own (`createLogger()`); `silentLogger` turns even these off.
 */
export function defaultLibraryLogger(): Logger {
  return (libraryLogger ??= createLogger({ level: 'warn', destination: process.stderr }));
}
