import { pino, type DestinationStream, type Logger } from 'pino';
import { logTraceFields } from './tracing/spans.js';
import { TRACING } from './tracing/switch.js';

// `fd` 2 sends logs to stderr (the CLI keeps stdout for its JSON answer); a stream, to it (tests read the lines).
export function createLogger(level: string, fd: 1 | 2 | DestinationStream = 1): Logger {
  return pino(
    {
      level,
      // A line written inside a traced span names it (trace_id, span_id), so logs and traces join.
      ...(TRACING ? { mixin: logTraceFields } : {}),
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'res.headers["set-cookie"]',
          'headers.authorization',
          '*.token',
          '*.password',
          '*.auth_token',
          '*.auth_password',
          '*.signing_secret',
          '*.previous_signing_secret',
          'SECRETS_KEY',
          'SECRETS_KEY_PREVIOUS',
          '*.SECRETS_KEY',
          '*.SECRETS_KEY_PREVIOUS',
        ],
        censor: '[redacted]',
      },
    },
    typeof fd === 'number' ? pino.destination(fd) : fd,
  );
}
