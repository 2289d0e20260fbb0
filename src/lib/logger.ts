import { pino, type Logger as PinoLogger } from 'pino';
import { prettyDestination } from './pretty-log.ts';

/**
 * The service's structured logger: pino, created once by the composition root (main.ts) and
 * handed down; each component takes a child (`log.child({ component: 'media' })`). Messages are
 * static; fields carry ids and codes, never transcripts, names or phone numbers (STYLE.md 12).
 */
export type Logger = PinoLogger;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface LoggerOptions {
  level: LogLevel;
  /** Where the JSON lines go; default stdout (the CLI logs to stderr, its stdout is its answer). */
  destination?: 'stdout' | 'stderr';
  /** Lines for a person (src/lib/pretty-log.ts) instead of JSON; `colour` adds ANSI colours. Default JSON. */
  pretty?: { colour: boolean };
}

/** Request fields worth a log line: never the headers (the API key), the access token in a URL redacted. */
function serializeRequest(req: { method?: string; url?: string; ip?: string }) {
  return { method: req.method, url: req.url?.replace(/([?&]token=)[^&]+/, '$1[redacted]'), remoteAddress: req.ip };
}

/** The root logger of a process: JSON lines (or lines for a person) at `level`, credentials redacted. */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level,
      // Never log credentials: the API key and cookies, should a header object reach a log line.
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' },
      serializers: { req: serializeRequest },
    },
    // Synchronous writes (pino's default): a line logged just before exit is never lost.
    options.pretty
      ? prettyDestination(options.destination === 'stderr' ? 2 : 1, options.pretty.colour)
      : pino.destination({ dest: options.destination === 'stderr' ? 2 : 1, sync: true }),
  );
}

/** A logger that writes nothing: for tests and tools with no log to write to. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
