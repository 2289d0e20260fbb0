import { pino, type Logger as PinoLogger } from 'pino';

/**
 * The service's structured logger: pino, created once by the composition root (main.ts) and
 * handed down; each component takes a child (`log.child({ component: 'media' })`). Messages are
 * static; fields carry ids and codes, never transcripts, names or phone numbers (STYLE.md 12).
 */
export type Logger = PinoLogger;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Header values that must never reach a log line: the API key and cookies. */
const REDACTED_PATHS = ['req.headers.authorization', 'req.headers.cookie'];

/** The root logger of a server process: JSON lines on stdout at `level`, credentials redacted. */
export function createLogger(options: { level: LogLevel }): Logger {
  return pino({
    level: options.level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  });
}

/** A logger that writes nothing: for tests and tools that have no log to write to. */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
