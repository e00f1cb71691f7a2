import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './connect.js';
import * as initial from './migrations/0001_initial.js';
import * as outbound from './migrations/0002_outbound.js';
import * as registrableDomains from './migrations/0003_registrable_company_domains.js';
import * as notifyKeyCreation from './migrations/0004_notify_key_creation.js';
import * as secretsAtRest from './migrations/0005_secrets_at_rest.js';
import * as deliveryTools from './migrations/0006_delivery_tools.js';
import * as sealCredentialHeaders from './migrations/0007_seal_credential_headers.js';
import * as deliveryRecovery from './migrations/0008_delivery_recovery.js';
import * as endpoints from './migrations/0009_endpoints.js';
import * as deletedWorkflows from './migrations/0011_deleted_workflows.js';
import * as consoleTables from './migrations/0012_console.js';
import * as workspaceKeys from './migrations/0013_workspace_keys.js';
import * as leadDailyCounts from './migrations/0015_lead_daily_counts.js';
import * as traceContext from './migrations/0016_trace_context.js';
import * as signInLinkMinter from './migrations/0017_sign_in_link_minter.js';
import * as erasure from './migrations/0018_erasure.js';
import * as auditLog from './migrations/0019_audit_log.js';
import * as leadImports from './migrations/0020_lead_imports.js';
import * as bindSealedSecrets from './migrations/0021_bind_sealed_secrets.js';
import * as leadMarksInPlace from './migrations/0022_lead_marks_in_place.js';
import * as dueDeliveriesByWorkspace from './migrations/0023_due_deliveries_by_workspace.js';
import * as dailyCountsInSlots from './migrations/0024_daily_counts_in_slots.js';
import { distributeTables } from './distribution.js';

// Migrations are listed here rather than read from a folder, so the same code runs
// compiled, under tsx and under jest without path juggling.
const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_outbound': outbound,
  '0003_registrable_company_domains': registrableDomains,
  '0004_notify_key_creation': notifyKeyCreation,
  '0005_secrets_at_rest': secretsAtRest,
  '0006_delivery_tools': deliveryTools,
  '0007_seal_credential_headers': sealCredentialHeaders,
  '0008_delivery_recovery': deliveryRecovery,
  '0009_endpoints': endpoints,
  '0011_deleted_workflows': deletedWorkflows,
  '0012_console': consoleTables,
  '0013_workspace_keys': workspaceKeys,
  '0015_lead_daily_counts': leadDailyCounts,
  '0016_trace_context': traceContext,
  '0017_sign_in_link_minter': signInLinkMinter,
  '0018_erasure': erasure,
  '0019_audit_log': auditLog,
  '0020_lead_imports': leadImports,
  '0021_bind_sealed_secrets': bindSealedSecrets,
  '0022_lead_marks_in_place': leadMarksInPlace,
  '0023_due_deliveries_by_workspace': dueDeliveriesByWorkspace,
  '0024_daily_counts_in_slots': dailyCountsInSlots,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

// Branches add migrations in parallel, so one may land with a name sorting before a migration
// a database already ran (0005_secrets_at_rest merged after 0006_delivery_tools): such a
// database runs it next instead of refusing to migrate. Each migration therefore touches
// only its own tables and columns and never relies on a later-numbered one.
export const createMigrator = (db: Db) => new Migrator({ db, provider, allowUnorderedMigrations: true });

export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await createMigrator(db).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  await distributeTables(db);
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
