// The process logger. Logs must never hold an API key, a provider credential or
// a prompt, at any level. Two layers:
//   - errors are logged through a whitelist (type, code, status, message, stack,
//     and the same for their cause): whatever else a library or a bug hangs on
//     an error object (the request, its headers, a client config) is dropped;
//   - plain objects go through pino's redact, for the field names that carry
//     credentials wherever they appear near the top of a log record.
import pino, { type DestinationStream, type Logger } from 'pino';

const SECRET_FIELDS = ['authorization', 'apiKey', 'api_key', 'password', 'secret', 'key', 'x-api-key', 'x-goog-api-key', 'cookie'];
const REDACT = SECRET_FIELDS.flatMap((f) => {
  const k = /^[A-Za-z_$][\w$]*$/.test(f) ? f : `["${f}"]`;
  const dot = k.startsWith('[') ? '' : '.';
  return [k, `*${dot}${k}`, `*.*${dot}${k}`, `*.*.*${dot}${k}`];
});

interface SafeError { type: string; message: string; stack?: string | undefined; code?: unknown; status?: unknown; cause?: SafeError | string }

/** An error reduced to what explains it. Depth-limited, since a cause chain may loop. */
export function safeError(err: unknown, depth = 0): SafeError | string {
  if (!(err instanceof Error)) return typeof err === 'string' ? err : `non-error thrown: ${Object.prototype.toString.call(err)}`;
  const e = err as Error & { code?: unknown; status?: unknown };
  const out: SafeError = { type: e.name, message: e.message, stack: e.stack };
  if (typeof e.code === 'string' || typeof e.code === 'number') out.code = e.code;
  if (typeof e.status === 'number') out.status = e.status;
  if (e.cause !== undefined && depth < 3) out.cause = safeError(e.cause, depth + 1);
  return out;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: { err: safeError, error: safeError },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Repeats of one warning within this window are counted, not logged. */
const REPEAT_WINDOW_MS = 60_000;

/**
 * A warning for a background task that fails on every tick while a dependency
 * is down (the rules and limits polls, the last_used_at flush): logged once,
 * then at most once a minute with the number of repeats it stood for, so a
 * minute of Postgres outage is two lines, not a hundred stack traces.
 */
export function repeatingWarning(log: { warn(obj: object, msg: string): void }, message: string, windowMs = REPEAT_WINDOW_MS): (err: unknown) => void {
  let lastAt = -Infinity;
  let repeats = 0;
  return (err) => {
    const now = Date.now();
    if (now - lastAt < windowMs) { repeats++; return; }
    log.warn(repeats ? { err, repeats } : { err }, message);
    lastAt = now;
    repeats = 0;
  };
}
