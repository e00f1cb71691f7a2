import type { Command } from 'commander';
import { mintSignInLink, setUserPassword } from '../../console-auth/service.js';
import { OPERATOR } from '../../audit/service.js';
import { Refused } from '../../refused.js';
import { positiveId } from '../../input.js';
import { runCommand } from '../cli-context.js';

/** Everything on standard input, one trailing line break dropped (`echo pw |` and `< file` both work). */
async function readStandardInput(): Promise<string> {
  if (process.stdin.isTTY) throw new Refused('invalid_argument', 'Pipe the password on standard input, e.g. `npm run --silent cli -- user set-password --id 1 < password.txt`.');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * The console's sign-in, from the operator's side: a single-use link (first sign-in and
 * recovery, no mail server needed) and a password read from standard input, never from an
 * argument (arguments show in `ps` and shell history).
 */
export function registerConsoleCommands(program: Command): void {
  const consoleCommand = program.command('console').description('The workspace console at /console');
  consoleCommand
    .command('link')
    .description('a single-use sign-in link, valid 15 minutes')
    .requiredOption('--user <id>')
    .action((options: { user: string }) => runCommand(({ db, config }) => mintSignInLink(db, OPERATOR, config.PUBLIC_URL, positiveId(options.user, '--user'))));

  const user = program.commands.find((command) => command.name() === 'user') ?? program.command('user');
  user
    .command('set-password')
    .description('reads the password from standard input')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async ({ db }) => {
        const id = positiveId(options.id, '--id');
        return setUserPassword(db, OPERATOR, id, await readStandardInput());
      }),
    );
}
