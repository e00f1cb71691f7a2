import type { Command } from 'commander';
import { findConnectors, insertConnector, setAutoPush, softDeleteConnector } from '../../connectors/repository.js';
import type { Executor } from '../../db/connect.js';
import type { BodyFormat, ConnectorAuth, ConnectorRow, FieldMapping, KeyValue, WebhookMethod, WorkflowBlock } from '../../db/schema.js';
import { loadLeads } from '../../outbound/fan-out.js';
import { isValidHeaderName } from '../../outbound/headers.js';
import { composeConnectorDelivery, connectorProblem } from '../../outbound/compose.js';
import { listDeliveries } from '../../outbound/delivery-repository.js';
import { checkUrlShape, RefusedDestination } from '../../outbound/network-guard.js';
import { isMappableAttribute, MAPPABLE_ATTRIBUTES, MAX_CONSTANT_FIELDS, MAX_HEADERS, MAX_MAPPED_FIELDS } from '../../outbound/payload.js';
import { newSigningSecret, sendNow } from '../../outbound/send-now.js';
import { findTagsByNames, insertMissingTags } from '../../tags/repository.js';
import { insertWorkflow } from '../../workflows/repository.js';
import { CliError, nonEmpty, positiveId, requireWorkspace } from '../cli-error.js';
import type { Runner } from '../main.js';

const METHODS: WebhookMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const collect = (value: string, previous: string[]) => [...previous, value];


function parseMethod(value: string | undefined): WebhookMethod {
  const method = (value ?? 'POST').toUpperCase();
  if (!METHODS.includes(method as WebhookMethod)) throw new CliError('invalid_argument', `--method must be one of ${METHODS.join(', ')}, got "${value}".`);
  return method as WebhookMethod;
}

function parseFormat(value: string | undefined): BodyFormat {
  const format = (value ?? 'json').toLowerCase();
  if (format !== 'json' && format !== 'form') throw new CliError('invalid_argument', `--format must be json or form, got "${value}".`);
  return format;
}

/** `key=value` pairs; the value may contain `=`; an empty value is allowed, an empty key is not. */
function parsePairs(values: string[], flag: string, cap: number): KeyValue[] {
  return values.slice(0, cap).map((pair) => {
    const at = pair.indexOf('=');
    const key = at < 0 ? '' : pair.slice(0, at).trim();
    if (at < 0 || key === '') throw new CliError('invalid_argument', `${flag} takes key=value, got "${pair}".`);
    return { key, value: pair.slice(at + 1) };
  });
}

function parseMapping(values: string[]): FieldMapping[] {
  return parsePairs(values, '--map', MAX_MAPPED_FIELDS).map(({ key: attribute, value: key }) => {
    if (!isMappableAttribute(attribute)) throw new CliError('invalid_argument', `--map: unknown lead attribute "${attribute}". Known: ${MAPPABLE_ATTRIBUTES.join(', ')}.`);
    if (key.trim() === '') throw new CliError('invalid_argument', `--map ${attribute}= needs a receiver key.`);
    return { attribute, key: key.trim() };
  });
}

function parseAuth(options: ConnectorOptions): ConnectorAuth {
  const type = (options.auth ?? 'none').toLowerCase();
  const required = (value: string | undefined, flag: string) => {
    if (value === undefined || value === '') throw new CliError('invalid_argument', `--auth ${type} needs ${flag}.`);
    return value;
  };
  switch (type) {
    case 'none':
      return { type: 'none' };
    case 'bearer':
      return { type: 'bearer', token: required(options.token, '--token') };
    case 'header': {
      const name = required(options.headerName, '--header-name');
      if (!isValidHeaderName(name)) throw new CliError('invalid_argument', `--header-name "${name}" is not a valid HTTP header name.`);
      return { type: 'header', name, value: required(options.headerValue, '--header-value') };
    }
    case 'basic':
      return { type: 'basic', username: required(options.username, '--username'), password: options.password ?? '' };
    default:
      throw new CliError('invalid_argument', `--auth must be none, bearer, header or basic, got "${options.auth}".`);
  }
}

function checkedUrl(value: string, flag: string): string {
  try {
    return checkUrlShape(value).toString();
  } catch (error) {
    if (error instanceof RefusedDestination) throw new CliError('invalid_argument', `${flag}: ${error.message}`);
    throw error;
  }
}

function parseBoolean(value: string, flag: string): boolean {
  if (['true', 'on', 'yes', '1'].includes(value)) return true;
  if (['false', 'off', 'no', '0'].includes(value)) return false;
  throw new CliError('invalid_argument', `${flag} must be true or false, got "${value}".`);
}

/** The connector as shown to an operator: credentials masked, the signing secret only at creation. */
function presentConnector(connector: ConnectorRow, showSecret: boolean) {
  const mask = (secret: string) => (secret.length <= 4 ? '****' : `****${secret.slice(-4)}`);
  const auth = connector.auth;
  return {
    id: connector.id,
    workspace_id: connector.workspace_id,
    kind: connector.kind,
    url: connector.url,
    method: connector.method,
    format: connector.format,
    auth: auth.type === 'bearer' ? { type: 'bearer', token: mask(auth.token) }
      : auth.type === 'basic' ? { type: 'basic', username: auth.username, password: mask(auth.password) }
        : auth.type === 'header' ? { type: 'header', name: auth.name, value: mask(auth.value) }
          : { type: 'none' },
    mapping: connector.mapping,
    fields: connector.fields,
    headers: connector.headers,
    auto_push: connector.auto_push,
    ...(showSecret ? { signing_secret: connector.signing_secret } : {}),
    created_at: connector.created_at,
  };
}

async function requireUsableConnector(db: Executor, value: string): Promise<ConnectorRow> {
  const id = positiveId(value, '--id');
  const connector = (await findConnectors(db, [id])).get(id);
  if (!connector) throw new CliError('not_found', `Connector ${id} does not exist.`);
  const problem = connectorProblem(connector, connector.workspace_id, id);
  if (problem) throw new CliError('connector_unusable', problem);
  return connector;
}

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
}

interface WorkflowOptions {
  workspace: string;
  trigger: string;
  tag?: string;
  connector?: string;
  url?: string;
  sendToCrm?: string;
  method?: string;
  format?: string;
  header: string[];
  field: string[];
}

export function registerOutboundCommands(program: Command, run: Runner): void {
  const connector = program.command('connector').description('Webhook connectors (apps and CRM)');
  connector.command('create').requiredOption('--workspace <id>').requiredOption('--url <url>')
    .option('--method <method>', 'GET, POST, PUT, PATCH or DELETE', 'POST').option('--format <format>', 'json or form', 'json')
    .option('--auth <type>', 'none, bearer, header or basic', 'none').option('--token <token>').option('--header-name <name>').option('--header-value <value>')
    .option('--username <username>').option('--password <password>')
    .option('--map <attribute=key>', 'lead attribute to receiver key (repeatable)', collect, [])
    .option('--field <key=value>', 'constant field sent every time (repeatable)', collect, [])
    .option('--header <name=value>', 'constant header sent every time (repeatable)', collect, [])
    .option('--auto-push', 'push every analyzed lead')
    .action((options: ConnectorOptions) => run(async ({ db }) => {
      const workspace = await requireWorkspace(db, options.workspace);
      const created = await insertConnector(db, {
        workspace_id: workspace.id,
        url: checkedUrl(options.url, '--url'),
        method: parseMethod(options.method),
        format: parseFormat(options.format),
        auth: parseAuth(options),
        mapping: parseMapping(options.map),
        fields: parsePairs(options.field, '--field', MAX_CONSTANT_FIELDS),
        headers: parsePairs(options.header, '--header', MAX_HEADERS),
        auto_push: options.autoPush === true,
        signing_secret: newSigningSecret(),
      });
      return presentConnector(created, true);
    }));

  connector.command('update').requiredOption('--id <id>').requiredOption('--auto-push <on|off>')
    .action((options: { id: string; autoPush: string }) => run(async ({ db }) => {
      const updated = await setAutoPush(db, positiveId(options.id, '--id'), parseBoolean(options.autoPush, '--auto-push'));
      if (!updated) throw new CliError('not_found', `Connector ${options.id} does not exist.`);
      return presentConnector(updated, false);
    }));

  connector.command('delete').requiredOption('--id <id>')
    .action((options: { id: string }) => run(async ({ db }) => {
      const deleted = await softDeleteConnector(db, positiveId(options.id, '--id'));
      if (!deleted) throw new CliError('not_found', `Connector ${options.id} does not exist.`);
      return { id: deleted.id, deleted: true };
    }));

  connector.command('test').requiredOption('--id <id>')
    .action((options: { id: string }) => run(async (ctx) => {
      const found = await requireUsableConnector(ctx.db, options.id);
      const delivery = composeConnectorDelivery(
        { workspaceId: found.workspace_id, trigger: 'test', maxAttempts: 1 },
        { connectorId: found.id, connector: found, event: 'test', lead: null },
      );
      const { delivered, status, reply, error, delivery_id } = await sendNow(ctx, delivery);
      return { delivered, status, reply, error, delivery_id };
    }));

  connector.command('push').requiredOption('--id <id>').requiredOption('--lead <id>')
    .action((options: { id: string; lead: string }) => run(async (ctx) => {
      const found = await requireUsableConnector(ctx.db, options.id);
      const leadId = positiveId(options.lead, '--lead');
      const lead = (await loadLeads(ctx.db, [{ id: leadId, workspace_id: found.workspace_id }])).get(leadId);
      if (!lead) throw new CliError('not_found', `Lead ${leadId} does not exist in the connector's workspace.`);
      const delivery = composeConnectorDelivery(
        { workspaceId: found.workspace_id, trigger: 'push', maxAttempts: ctx.config.WEBHOOK_MAX_ATTEMPTS },
        { connectorId: found.id, connector: found, event: 'lead', lead },
      );
      return sendNow(ctx, delivery);
    }));

  const workflow = program.command('workflow').description('Workflows with one Send Webhook block');
  workflow.command('create').requiredOption('--workspace <id>').requiredOption('--trigger <trigger>', 'lead_created or tag_added')
    .option('--tag <name>', 'the tag of a tag_added trigger (created when missing)')
    .option('--connector <id>', 'Saved connector endpoint').option('--url <url>', 'Custom URL endpoint (merge tags allowed)')
    .option('--send-to-crm <id>', 'a Send to CRM block instead: the connector\'s own push')
    .option('--method <method>', 'Custom URL method', 'POST').option('--format <format>', 'Custom URL body format', 'json')
    .option('--header <name=value>', 'Custom URL header (repeatable, merge tags allowed)', collect, [])
    .option('--field <key=value>', 'block field (repeatable, merge tags allowed)', collect, [])
    .action((options: WorkflowOptions) => run(async ({ db }) => {
      const workspace = await requireWorkspace(db, options.workspace);
      if (options.trigger !== 'lead_created' && options.trigger !== 'tag_added') {
        throw new CliError('invalid_argument', `--trigger must be lead_created or tag_added, got "${options.trigger}".`);
      }
      if (options.trigger === 'tag_added' && options.tag === undefined) throw new CliError('invalid_argument', '--trigger tag_added needs --tag.');
      if (options.trigger === 'lead_created' && options.tag !== undefined) throw new CliError('invalid_argument', '--tag only goes with --trigger tag_added.');
      const endpoints = [options.connector, options.url, options.sendToCrm].filter((value) => value !== undefined);
      if (endpoints.length !== 1) throw new CliError('invalid_argument', 'Give exactly one of --connector, --url or --send-to-crm.');
      if (options.sendToCrm !== undefined && options.field.length > 0) throw new CliError('invalid_argument', '--field does not apply to --send-to-crm: the connector\'s own fields and mapping are sent.');
      const fields = parsePairs(options.field, '--field', MAX_CONSTANT_FIELDS);
      const warnings: string[] = [];
      let block: WorkflowBlock;
      const savedConnector = options.connector ?? options.sendToCrm;
      if (savedConnector !== undefined) {
        const flag = options.connector !== undefined ? '--connector' : '--send-to-crm';
        const connectorId = positiveId(savedConnector, flag);
        // Saved even when unusable: the run records the configuration error, as for a connector deleted later.
        const problem = connectorProblem((await findConnectors(db, [connectorId])).get(connectorId), workspace.id, connectorId);
        if (problem) warnings.push(`${problem} Runs of this workflow will fail until it is fixed.`);
        block = { endpoint: options.connector !== undefined ? 'connector' : 'crm', connector_id: connectorId, fields };
      } else {
        if (options.url!.trim() === '') warnings.push('The Custom URL is empty: runs of this workflow will fail.');
        block = { endpoint: 'url', url: options.url!, method: parseMethod(options.method), format: parseFormat(options.format), headers: parsePairs(options.header, '--header', MAX_HEADERS), fields };
      }
      return db.transaction().execute(async (trx) => {
        let tag: { id: number; name: string } | null = null;
        if (options.tag !== undefined) {
          const name = nonEmpty(options.tag, '--tag');
          await insertMissingTags(trx, workspace.id, [name]);
          const [found] = await findTagsByNames(trx, workspace.id, [name]);
          tag = { id: found!.id, name: found!.name };
        }
        const created = await insertWorkflow(trx, { workspace_id: workspace.id, trigger: options.trigger as 'lead_created' | 'tag_added', tag_id: tag?.id ?? null, block, signing_secret: newSigningSecret() });
        return { id: created.id, workspace_id: created.workspace_id, trigger: created.trigger, tag, block: created.block, signing_secret: created.signing_secret, active: created.active, created_at: created.created_at, warnings };
      });
    }));

  const deliveries = program.command('deliveries').description('Webhook deliveries and their attempts');
  deliveries.command('list').requiredOption('--workspace <id>').option('--lead <id>')
    .action((options: { workspace: string; lead?: string }) => run(async ({ db }) => {
      const workspace = await requireWorkspace(db, options.workspace);
      return listDeliveries(db, workspace.id, options.lead === undefined ? undefined : positiveId(options.lead, '--lead'));
    }));
}
