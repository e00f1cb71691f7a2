import { Refused } from '../refused.js';

// Connector credentials reach the CLI without appearing on its command line, which other users
// of the machine see in the process list (`ps`) and which stays in shell history: `-` as the
// flag's value reads the secret from standard input, or an environment variable carries it.
// A value typed after the flag still works, with a warning on stderr.

export interface SecretSource {
  flag: string;
  env: string;
}

export const CONNECTOR_SECRETS = {
  token: { flag: '--token', env: 'LEAD_INTAKE_CONNECTOR_TOKEN' },
  password: { flag: '--password', env: 'LEAD_INTAKE_CONNECTOR_PASSWORD' },
  headerValue: { flag: '--header-value', env: 'LEAD_INTAKE_CONNECTOR_HEADER_VALUE' },
} as const satisfies Record<string, SecretSource>;

export type ConnectorSecrets = { -readonly [Name in keyof typeof CONNECTOR_SECRETS]: string | undefined };

/** The flag's value that reads the secret from standard input. */
const FROM_STDIN = '-';

/** How to pass a secret without the command line, for messages. */
export const otherWays = (source: SecretSource) => `\`${source.flag} -\` reads it from standard input, or set ${source.env}`;

/** Standard input to its end, one trailing line break dropped (`echo` and here-strings add one). */
async function readStandardInput(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** One JSON line on stderr: stdout carries only the command's result. */
const warnOnStderr = (message: string) => process.stderr.write(`${JSON.stringify({ warning: 'secret_on_command_line', message })}\n`);

/**
 * The connector secrets of `connector create`, each from the first of: its flag's value `-`
 * (standard input; only one flag may take it), its flag's value (warned about), its
 * environment variable. Undefined when none gives one.
 */
export async function readConnectorSecrets(flags: ConnectorSecrets): Promise<ConnectorSecrets> {
  const names = Object.keys(CONNECTOR_SECRETS) as Array<keyof ConnectorSecrets>;
  const fromStdin = names.filter((name) => flags[name] === FROM_STDIN);
  if (fromStdin.length > 1) {
    throw new Refused(
      'invalid_argument',
      `Only one secret can come from standard input, not ${fromStdin.map((name) => CONNECTOR_SECRETS[name].flag).join(' and ')}: pass the other through its environment variable.`,
    );
  }
  const secrets = {} as ConnectorSecrets;
  for (const name of names) {
    const source = CONNECTOR_SECRETS[name];
    const value = flags[name];
    if (value === FROM_STDIN) {
      secrets[name] = await readStandardInput(process.stdin);
    } else if (value !== undefined) {
      warnOnStderr(`${source.flag} on the command line is visible to other users in the process list (ps) and stays in shell history; ${otherWays(source)}.`);
      secrets[name] = value;
    } else {
      secrets[name] = process.env[source.env] || undefined;
    }
  }
  return secrets;
}
