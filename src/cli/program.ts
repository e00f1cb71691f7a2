import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { isUnavailable } from '../db/availability.js';
import { EmbeddedDatabaseError } from '../db/embedded/start.js';
import { isForeignKeyViolation, isUniqueViolation } from '../db/sql.js';
import { describeStartupFailure } from '../lifecycle.js';
import { Refused } from '../refused.js';
import { SecretKeyError } from '../secrets/keyring.js';
import { inSpan } from '../tracing/spans.js';
import { flushTraces } from '../tracing/switch.js';
import { registerAuditCommands } from './commands/audit.js';
import { registerConnectorCommands } from './commands/connectors.js';
import { registerConsoleCommands } from './commands/console.js';
import { registerCoreCommands } from './commands/core.js';
import { registerDeliveryCommands } from './commands/deliveries.js';
import { registerLeadCommands } from './commands/leads.js';
import { registerPersonalDataCommands } from './commands/personal-data.js';
import { registerSecretsCommands } from './commands/secrets.js';
import { registerWorkflowCommands } from './commands/workflows.js';
import { registerWorkspaceAdminCommands } from './commands/workspace-admin.js';

async function fail(code: string, message: string): Promise<never> {
  process.stderr.write(`${JSON.stringify({ error: code, message })}\n`);
  await flushTraces();
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
  registerLeadCommands(program);
  registerPersonalDataCommands(program);
  registerAuditCommands(program);
  return program;
}

/** Runs the command of the process's arguments, a span of its own when tracing (named by its noun and verb). */
export async function runCli(): Promise<void> {
  try {
    const [noun, verb] = process.argv.slice(2);
    await inSpan(['cli', noun, verb].filter(Boolean).join(' '), {}, () => buildProgram().parseAsync(process.argv));
  } catch (error) {
    if (error instanceof Refused) await fail(error.code, error.message);
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') process.exit(0);
      await fail('invalid_arguments', error.message.replace(/^error: /, ''));
    }
    if (error instanceof ConfigError || error instanceof SecretKeyError) await fail('invalid_configuration', error.message);
    if (error instanceof EmbeddedDatabaseError || isUnavailable(error)) await fail('database_unavailable', describeStartupFailure(error));
    if (isUniqueViolation(error)) await fail('conflict', 'A record with these values already exists.');
    if (isForeignKeyViolation(error)) await fail('not_found', 'A referenced record does not exist.');
    await fail('internal_error', error instanceof Error ? error.message : String(error));
  }
  await flushTraces();
}
