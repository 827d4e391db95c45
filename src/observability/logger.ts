import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * One JSON event per state transition, named in `event` (`hold.expired`,
 * `intent.accepted`, ...) and joinable by holdId, intentId and attempt.
 * Recipient addresses and message bodies are never logged: the redact list
 * is a second line of defence behind not passing them in the first place.
 */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
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
    (options.destination ?? process.stdout) as pino.DestinationStream,
  );
}

/** A logger that drops everything, for library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });
