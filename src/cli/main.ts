import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { isUnavailable } from '../db/availability.js';
import { EmbeddedDatabaseError } from '../db/embedded/start.js';
import { isForeignKeyViolation, isUniqueViolation } from '../db/sql.js';
import { describeStartupFailure } from '../lifecycle.js';
import { Refused } from '../refused.js';
import { SecretKeyError } from '../secrets/keyring.js';
import { registerConnectorCommands } from './commands/connectors.js';
import { registerConsoleCommands } from './commands/console.js';
import { registerCoreCommands } from './commands/core.js';
import { registerDeliveryCommands } from './commands/deliveries.js';
import { registerSecretsCommands } from './commands/secrets.js';
import { registerWorkflowCommands } from './commands/workflows.js';
import { registerWorkspaceAdminCommands } from './commands/workspace-admin.js';

function fail(code: string, message: string): never {
  process.stderr.write(`${JSON.stringify({ error: code, message })}\n`);
  process.exit(1);
}

function buildProgram(): Command {
  const program = new Command('cli')
    .description('Lead Intake API admin CLI: prints one JSON value on stdout')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: (text) => process.stderr.write(text) })
    .showHelpAfterError(false);
  registerCoreCommands(program);
  registerConnectorCommands(program);
  registerWorkflowCommands(program);
  registerDeliveryCommands(program);
  registerSecretsCommands(program);
  registerConsoleCommands(program);
  registerWorkspaceAdminCommands(program);
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (error) {
    if (error instanceof Refused) fail(error.code, error.message);
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') process.exit(0);
      fail('invalid_arguments', error.message.replace(/^error: /, ''));
    }
    if (error instanceof ConfigError || error instanceof SecretKeyError) fail('invalid_configuration', error.message);
    if (error instanceof EmbeddedDatabaseError || isUnavailable(error)) fail('database_unavailable', describeStartupFailure(error));
    if (isUniqueViolation(error)) fail('conflict', 'A record with these values already exists.');
    if (isForeignKeyViolation(error)) fail('not_found', 'A referenced record does not exist.');
    fail('internal_error', error instanceof Error ? error.message : String(error));
  }
}

await main();
