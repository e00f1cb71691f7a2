import { pino, type Logger } from 'pino';

// `fd` 2 sends logs to stderr (the CLI keeps stdout for its JSON answer).
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  return pino(
    {
      level,
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
    pino.destination(fd),
  );
}
