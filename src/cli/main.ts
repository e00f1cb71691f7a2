import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { CliError } from './cli-error.js';
import { withCliContext, type CliContext } from './cli-context.js';
import { registerCoreCommands } from './commands/core.js';
import { registerOutboundCommands } from './commands/outbound.js';

export type CliAction = (ctx: CliContext) => Promise<unknown>;

function fail(code: string, message: string): never {
  process.stderr.write(`${JSON.stringify({ error: code, message })}\n`);
  process.exit(1);
}

async function run(action: CliAction): Promise<void> {
  const result = await withCliContext(action);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

export function buildProgram(): Command {
  const program = new Command('cli')
    .description('Lead Intake API admin CLI: prints one JSON value on stdout')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: (text) => process.stderr.write(text) })
    .showHelpAfterError(false);
  registerCoreCommands(program, run);
  registerOutboundCommands(program, run);
  return program;
}

export type Runner = typeof run;

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CliError) fail(error.code, error.message);
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') process.exit(0);
      fail('invalid_arguments', error.message.replace(/^error: /, ''));
    }
    if (error instanceof ConfigError) fail('invalid_configuration', error.message);
    const code = (error as { code?: string }).code;
    if (code === '23505') fail('conflict', 'A record with these values already exists.');
    if (code === '23503') fail('not_found', 'A referenced record does not exist.');
    fail('internal_error', error instanceof Error ? error.message : String(error));
  }
}

await main();
