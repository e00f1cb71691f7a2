import type { Command } from 'commander';
import { resealConnectors } from '../../connectors/repository.js';
import { resealDeliveries } from '../../deliveries/repository.js';
import { keyring } from '../../secrets/keyring.js';
import { resealWorkflows } from '../../workflows/repository.js';
import { runCommand } from '../cli-context.js';

export function registerSecretsCommands(program: Command): void {
  const secrets = program.command('secrets').description('Secrets at rest');
  // After a key change (old key in SECRETS_KEY_PREVIOUS): once every value is sealed with
  // SECRETS_KEY, the previous keys can be dropped. One transaction: all or nothing.
  secrets
    .command('reencrypt')
    .description('Seal every stored secret again with SECRETS_KEY')
    .action(() =>
      runCommand(({ db }) =>
        db.transaction().execute(async (trx) => ({
          key_id: keyring().current.id,
          connectors: await resealConnectors(trx),
          workflows: await resealWorkflows(trx),
          deliveries: await resealDeliveries(trx),
        })),
      ),
    );
}
