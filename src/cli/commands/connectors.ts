import type { Command } from 'commander';
import {
  createConnector,
  deleteConnector,
  enableConnector,
  listWorkspaceConnectors,
  pushLead,
  rotateSigningSecret,
  testConnector,
  updateConnector,
} from '../../connectors/service.js';
import { OPERATOR } from '../../audit/service.js';
import type { Db } from '../../db/connect.js';
import type { ConnectorAuth, FieldMapping } from '../../db/schema.js';
import { droppedHeaderReason } from '../../deliveries/headers.js';
import { isMappableAttribute, MAPPABLE_ATTRIBUTES, MAX_CONSTANT_FIELDS, MAX_HEADERS, MAX_MAPPED_FIELDS } from '../../deliveries/payload.js';
import { Refused } from '../../refused.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { parseFormat, parseMaxPerSecond, parseMethod, parsePairs, parseWebhookUrl } from '../../connectors/input.js';
import { parseBoolean, positiveId } from '../../input.js';
import { workspaceOfId } from '../../workspaces/owned.js';
import { collect } from '../arguments.js';
import { runCommand } from '../cli-context.js';
import { CONNECTOR_SECRETS, otherWays, readConnectorSecrets, type ConnectorSecrets, type SecretSource } from '../secret-input.js';

interface ConnectorOptions {
  workspace: string;
  url: string;
  method?: string;
  format?: string;
  auth?: string;
  token?: string;
  headerName?: string;
  headerValue?: string;
  username?: string;
  password?: string;
  map: string[];
  field: string[];
  header: string[];
  autoPush?: boolean;
  maxPerSecond?: string;
}

function parseMapping(values: string[]): FieldMapping[] {
  return parsePairs(values, '--map', MAX_MAPPED_FIELDS).map(({ key: attribute, value: key }) => {
    if (!isMappableAttribute(attribute)) throw new Refused('invalid_argument', `--map: unknown lead attribute "${attribute}". Known: ${MAPPABLE_ATTRIBUTES.join(', ')}.`);
    if (key.trim() === '') throw new Refused('invalid_argument', `--map ${attribute}= needs a receiver key.`);
    return { attribute, key: key.trim() };
  });
}

/** The authentication; its secret comes from `secrets` (src/cli/secret-input.ts), never from `options` directly. */
function parseAuth(options: ConnectorOptions, secrets: ConnectorSecrets): ConnectorAuth {
  const type = (options.auth ?? 'none').toLowerCase();
  const required = (value: string | undefined, flag: string) => {
    if (value === undefined || value === '') throw new Refused('invalid_argument', `--auth ${type} needs ${flag}.`);
    return value;
  };
  const requiredSecret = (value: string | undefined, source: SecretSource) => required(value, `${source.flag} (${otherWays(source)})`);
  switch (type) {
    case 'none':
      return { type: 'none' };
    case 'bearer':
      return { type: 'bearer', token: requiredSecret(secrets.token, CONNECTOR_SECRETS.token) };
    case 'header': {
      const name = required(options.headerName, '--header-name');
      const unsendable = droppedHeaderReason(name);
      if (unsendable) throw new Refused('invalid_argument', `--header-name: ${unsendable}.`);
      return { type: 'header', name, value: requiredSecret(secrets.headerValue, CONNECTOR_SECRETS.headerValue) };
    }
    case 'basic':
      return { type: 'basic', username: required(options.username, '--username'), password: secrets.password ?? '' };
    default:
      throw new Refused('invalid_argument', `--auth must be none, bearer, header or basic, got "${options.auth}".`);
  }
}

// A day lets every receiver pick up the new secret; a month is the longest two secrets stay valid.
const DEFAULT_OVERLAP_HOURS = 24;
const MAX_OVERLAP_HOURS = 720;

function parseOverlapHours(value: string): number {
  const hours = Number(value);
  if (!/^\d+$/.test(value.trim()) || hours > MAX_OVERLAP_HOURS) {
    throw new Refused('invalid_argument', `--overlap-hours must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}, got "${value}".`);
  }
  return hours;
}

async function createFromOptions(db: Db, options: ConnectorOptions, secrets: ConnectorSecrets) {
  const maxPerSecond = options.maxPerSecond === undefined ? null : parseMaxPerSecond(options.maxPerSecond, '--max-per-second', { allowOff: false });
  const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
  return createConnector(
    db,
    OPERATOR,
    {
      workspace_id: workspace.id,
      url: parseWebhookUrl(options.url, '--url'),
      method: parseMethod(options.method),
      format: parseFormat(options.format),
      auth: parseAuth(options, secrets),
      mapping: parseMapping(options.map),
      fields: parsePairs(options.field, '--field', MAX_CONSTANT_FIELDS),
      headers: parsePairs(options.header, '--header', MAX_HEADERS),
      auto_push: options.autoPush === true,
    },
    maxPerSecond,
  );
}

export function registerConnectorCommands(program: Command): void {
  const connector = program.command('connector').description('Webhook connectors (apps and CRM)');
  connector
    .command('create')
    .requiredOption('--workspace <id>')
    .requiredOption('--url <url>')
    .option('--method <method>', 'GET, POST, PUT, PATCH or DELETE', 'POST')
    .option('--format <format>', 'json or form', 'json')
    .option('--auth <type>', 'none, bearer, header or basic', 'none')
    .option('--token <token>', `- reads it from standard input; or set ${CONNECTOR_SECRETS.token.env}`)
    .option('--header-name <name>')
    .option('--header-value <value>', `- reads it from standard input; or set ${CONNECTOR_SECRETS.headerValue.env}`)
    .option('--username <username>')
    .option('--password <password>', `- reads it from standard input; or set ${CONNECTOR_SECRETS.password.env}`)
    .option('--map <attribute=key>', 'lead attribute to receiver key (repeatable)', collect, [])
    .option('--field <key=value>', 'constant field sent every time (repeatable)', collect, [])
    .option('--header <name=value>', 'constant header sent every time (repeatable)', collect, [])
    .option('--auto-push', 'push every analyzed lead')
    .option('--max-per-second <n>', 'at most this many deliveries per second, across every worker (default: no cap)')
    .action(async (options: ConnectorOptions) => {
      // Standard input is read before the database is opened: a command waiting for it holds no connection.
      const secrets = await readConnectorSecrets({ token: options.token, password: options.password, headerValue: options.headerValue });
      await runCommand(({ db }) => createFromOptions(db, options, secrets));
    });

  connector
    .command('list')
    .description('not deleted ones, credentials masked')
    .requiredOption('--workspace <id>')
    .action((options: { workspace: string }) =>
      runCommand(async ({ db }) => listWorkspaceConnectors(db, (await requireWorkspace(db, positiveId(options.workspace, '--workspace'))).id)),
    );

  connector
    .command('update')
    .requiredOption('--id <id>')
    .option('--auto-push <on|off>')
    .option('--max-per-second <n|off>', 'cap its deliveries per second, or off')
    .action((options: { id: string; autoPush?: string; maxPerSecond?: string }) =>
      runCommand(({ db }) => {
        if (options.autoPush === undefined && options.maxPerSecond === undefined) throw new Refused('invalid_argument', 'Give --auto-push, --max-per-second or both.');
        return updateConnector(db, OPERATOR, positiveId(options.id, '--id'), {
          autoPush: options.autoPush === undefined ? undefined : parseBoolean(options.autoPush, '--auto-push'),
          maxPerSecond: options.maxPerSecond === undefined ? undefined : parseMaxPerSecond(options.maxPerSecond, '--max-per-second', { allowOff: true }),
        });
      }),
    );

  connector
    .command('enable')
    .description('sends to a connector disabled for sustained failure again')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => enableConnector(db, OPERATOR, positiveId(options.id, '--id'))));

  connector
    .command('delete')
    .description('sends nothing more: its pending deliveries, retries included, end Failed unsent')
    .requiredOption('--id <id>')
    .action((options: { id: string }) => runCommand(({ db }) => deleteConnector(db, OPERATOR, positiveId(options.id, '--id'))));

  connector
    .command('rotate-secret')
    .requiredOption('--id <id>')
    .option('--overlap-hours <hours>', 'how long the previous secret keeps signing too (0 to 720)', String(DEFAULT_OVERLAP_HOURS))
    .action((options: { id: string; overlapHours: string }) =>
      runCommand(({ db }) => rotateSigningSecret(db, OPERATOR, positiveId(options.id, '--id'), parseOverlapHours(options.overlapHours))),
    );

  connector
    .command('test')
    .requiredOption('--id <id>')
    .action((options: { id: string }) =>
      runCommand(async (ctx) => {
        const id = positiveId(options.id, '--id');
        return testConnector(ctx, id, await workspaceOfId(ctx.db, 'connectors', id));
      }),
    );

  connector
    .command('push')
    .requiredOption('--id <id>')
    .requiredOption('--lead <id>')
    .action((options: { id: string; lead: string }) =>
      runCommand(async (ctx) => {
        const [id, leadId] = [positiveId(options.id, '--id'), positiveId(options.lead, '--lead')];
        return pushLead(ctx, id, leadId, await workspaceOfId(ctx.db, 'connectors', id));
      }),
    );
}
