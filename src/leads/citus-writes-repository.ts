import { sql } from 'kysely';
import { formatTimestamp, type Db, type Executor } from '../db/connect.js';
import { runOnWorkspaceNode } from '../db/delegated.js';
import { enqueue, enqueueWithIds } from '../outbox/repository.js';
import type { LeadRecord } from './columns.js';
import { addDailyCountsOfWorkspace, dailyCountsOfWorkspace } from './daily-counts-repository.js';
import { attachTagsOfWorkspace, attachTagsStatement, claimKeysOfWorkspace, claimMatchKeysOfWorkspace, oneWorkspace } from './lead-rows-repository.js';
import { INSERTED_COLUMNS, INSERTED_VALUES, LEAD_SOURCE_COLUMNS, newLeadsInput, type NewLeadWrite, type WrittenLeadOf } from './new-leads-repository.js';
import { findLeadRecords, LEAD_RECORDS, leadRecordOf } from './read-repository.js';
import { MERGE_SOURCE_COLUMNS, mergeRows, mergeUpdate, type LeadMerge, type MergedLead } from './write-repository.js';

// The Citus executor's writes of leads (src/leads/intake/executor.ts): what the new-lead
// statement (new-leads-repository.ts) and the merge statement (write-repository.ts) write, for
// the leads of one workspace, as statements that each name the workspace and that the
// coordinator sends whole, as one task, to the node holding it. The two statements are CTEs
// over jsonb_to_recordset, which Citus plans as about a dozen steps of their own through the
// coordinator (docs/architecture.md, "The Citus executor"). New leads that commit alone go to
// the node as one call (src/db/delegated.ts, runOnWorkspaceNode).

/**
 * insertNewLeads on a Citus coordinator (the Citus executor, src/leads/intake/executor.ts): the
 * same writes and the same answer as the new-lead statement, for leads of one workspace, as
 * statements that each name the workspace and are each one task on the node holding it (the
 * new-lead statement's CTEs are planned by the coordinator as a dozen steps, each INSERT pulled
 * through itself). The ids first (the coordinator's sequence, in the leads' order), the lead
 * rows, the match keys in key order, then for the complete leads their tags and events; the
 * records are read back as findLeadRecords reads them. `commitsAlone`: the day's counts added,
 * and a key another lead holds fails it writing nothing, as the statement does; outside a
 * transaction, every statement but the ids' goes to the workspace's node in one call
 * (insertNewLeadsOnNode), committed there without two-phase commit.
 */
export async function insertNewLeadsOnCitus(
  db: Executor,
  workspaceId: number,
  leads: readonly NewLeadWrite[],
  { records, commitsAlone = false }: { records: boolean; commitsAlone?: boolean },
): Promise<WrittenLeadOf[]> {
  if (commitsAlone && !db.isTransaction) return insertNewLeadsOnNode(db as Db, workspaceId, leads, records);
  const { leads: ids } = await takeIds(db, leads.length, 0);
  await insertLeadRows(workspaceId, leads, ids).execute(db);
  const claimed = await claimMatchKeysOfWorkspace(db, workspaceId, keysOf(leads, ids), commitsAlone ? 'fails' : 'stays');
  const complete = leads.map((lead, ord) => lead.keys.length === (claimed.get(ids[ord]!) ?? 0));
  await attachTagsOfWorkspace(db, workspaceId, tagsOf(leads, ids, complete));
  await enqueue(db, workspaceId, eventsOf(leads, ids, complete));
  if (commitsAlone) await addDailyCountsOfWorkspace(db, workspaceId, { created: complete.filter(Boolean).length, updated: 0, skipped: 0, failed: 0 });
  const stored = records
    ? new Map(
        (
          await findLeadRecords(
            db,
            workspaceId,
            ids.filter((_, ord) => complete[ord]),
          )
        ).map((record) => [record.id, record]),
      )
    : null;
  return ids.map((id, ord) => ({ ord, id, complete: complete[ord]!, ...(stored && complete[ord] ? { record: stored.get(id)! } : {}) }));
}

/**
 * insertNewLeadsOnCitus when the leads commit alone: the same statements, sent as one call to
 * the workspace's node (runOnWorkspaceNode), where they are one transaction; a key another lead
 * holds fails the call, writing nothing. The ids are the coordinator's, taken first.
 */
async function insertNewLeadsOnNode(db: Db, workspaceId: number, leads: readonly NewLeadWrite[], records: boolean): Promise<WrittenLeadOf[]> {
  const all = leads.map(() => true);
  const eventCount = leads.reduce((count, lead) => count + lead.events.length, 0);
  const { leads: ids, events: eventIds } = await takeIds(db, leads.length, eventCount);
  const keys = keysOf(leads, ids);
  const tags = tagsOf(leads, ids, all);
  const steps = [
    insertLeadRows(workspaceId, leads, ids).compile(db),
    ...(keys.length > 0 ? [claimKeysOfWorkspace(workspaceId, keys, 'fails').compile(db)] : []),
    ...(tags.length > 0 ? [attachTagsStatement(workspaceId, tags).compile(db)] : []),
    ...(eventCount > 0 ? [enqueueWithIds(workspaceId, eventsOf(leads, ids, all), eventIds).compile(db)] : []),
    dailyCountsOfWorkspace(workspaceId, { created: leads.length, updated: 0, skipped: 0, failed: 0 }).compile(db),
  ];
  const stored = await runOnWorkspaceNode<LeadRecord>(db, workspaceId, steps, records ? LEAD_RECORDS.compiled({ workspaceId, ids: [...ids] }) : null);
  const byId = new Map(stored.map((record) => [record.id, { ...record, created_at: formatTimestamp(record.created_at), updated_at: formatTimestamp(record.updated_at) }]));
  return ids.map((id, ord) => ({ ord, id, complete: true, ...(records ? { record: byId.get(id)! } : {}) }));
}

/** Ids for `leadCount` new leads and `eventCount` outbox events from the coordinator's sequences, each in order, in one statement. */
async function takeIds(db: Executor, leadCount: number, eventCount: number): Promise<{ leads: number[]; events: number[] }> {
  const { rows } = await sql<{ leads: string[]; events: string[] }>`
    SELECT ARRAY(SELECT nextval(pg_get_serial_sequence('leads', 'id')) FROM generate_series(1, ${leadCount}::int)) AS leads,
      ARRAY(SELECT nextval(pg_get_serial_sequence('outbox', 'id')) FROM generate_series(1, ${eventCount}::int)) AS events`.execute(db);
  return { leads: rows[0]!.leads.map(Number), events: rows[0]!.events.map(Number) };
}

/** The lead rows, each with its id, in order. */
function insertLeadRows(workspaceId: number, leads: readonly NewLeadWrite[], ids: readonly number[]) {
  const input = newLeadsInput(workspaceId, leads);
  const sourceColumns = sql.raw(['ord int', 'key_count int', ...LEAD_SOURCE_COLUMNS].join(', '));
  return sql`
    INSERT INTO leads (id, workspace_id, ${INSERTED_COLUMNS})
    OVERRIDING SYSTEM VALUE
    SELECT (${ids}::bigint[])[r.ord + 1], ${workspaceId}::bigint, ${INSERTED_VALUES}
    FROM jsonb_to_recordset(${input.rows}::jsonb) AS r(${sourceColumns})
    ORDER BY r.ord`;
}

const keysOf = (leads: readonly NewLeadWrite[], ids: readonly number[]) => leads.flatMap((lead, ord) => lead.keys.map((key) => ({ ...key, leadId: ids[ord]! })));

/** The tags of the complete leads. */
const tagsOf = (leads: readonly NewLeadWrite[], ids: readonly number[], complete: readonly boolean[]) =>
  leads.flatMap((lead, ord) => (complete[ord] ? [...new Set(lead.tagIds)].map((tagId) => ({ leadId: ids[ord]!, tagId })) : []));

/** The events of the complete leads, `lead.created` naming its lead. */
const eventsOf = (leads: readonly NewLeadWrite[], ids: readonly number[], complete: readonly boolean[]) =>
  leads.flatMap((lead, ord) =>
    complete[ord]
      ? lead.events.map((event) => ({ ...(event.topic === 'lead.created' ? { topic: event.topic, payload: { lead_id: ids[ord]! } } : event), trace: lead.trace ?? null }))
      : [],
  );

/**
 * mergeIntoLeads on a Citus coordinator (the Citus executor, src/leads/intake/executor.ts): the
 * same writes and the same answer as the merge statement, for leads of one workspace, as
 * statements that each name the workspace and are each one task on the node holding it (the
 * merge statement's CTEs are planned by the coordinator as steps of their own, each INSERT pulled
 * through itself): the UPDATE, then for the leads it found their match keys, their tags and
 * their events, and the leads read back as findLeadRecords reads them; when no merge attaches
 * tags, the UPDATE returns them so (leadRecordOf), and they are not read again.
 */
export async function mergeIntoLeadsOnCitus(db: Executor, workspaceId: number, merges: readonly LeadMerge[]): Promise<MergedLead[]> {
  const input = mergeRows(merges);
  // Without tags to attach, the update's own answer is the record: nothing after it changes what the record shows.
  const recordsFromUpdate = merges.every((merge) => merge.tagIds.length === 0);
  const workspace = sql<number>`${workspaceId}::bigint`;
  const { rows: updated } = await sql<MergedLead>`
    WITH r AS (
      SELECT * FROM jsonb_to_recordset(${input.rows}::jsonb) AS r(${MERGE_SOURCE_COLUMNS})
    )
    ${mergeUpdate(sql.val(input.leadIds), oneWorkspace(workspace), recordsFromUpdate ? leadRecordOf('l', workspace) : sql`l.id`)}`.execute(db);
  const found = [...updated].sort((a, b) => a.ord - b.ord);
  const idOf = new Map(found.map((row) => [row.ord, row.id]));
  await claimMatchKeysOfWorkspace(
    db,
    workspaceId,
    found.flatMap(({ ord, id }) => merges[ord]!.keys.map((key) => ({ ...key, leadId: id }))),
    'stays',
  );
  const tagged = await attachTagsOfWorkspace(
    db,
    workspaceId,
    found.flatMap(({ ord, id }) => [...new Set(merges[ord]!.tagIds)].map((tagId) => ({ leadId: id, tagId }))),
  );
  const attached = new Set(tagged.map((row) => `${row.lead_id}:${row.tag_id}`));
  await enqueue(
    db,
    workspaceId,
    found.flatMap(({ ord, id }) => {
      const merge = merges[ord]!;
      const tagsAdded = [...new Set(merge.tagIds)].filter((tagId) => attached.has(`${id}:${tagId}`));
      return [
        ...merge.events.map((event) => ({ ...event, trace: merge.trace ?? null })),
        ...tagsAdded.map((tagId) => ({ topic: 'lead.tag_added' as const, payload: { lead_id: id, tag_id: tagId }, trace: merge.trace ?? null })),
      ];
    }),
  );
  if (recordsFromUpdate) return found;
  const records = new Map((await findLeadRecords(db, workspaceId, [...idOf.values()])).map((record) => [record.id, record]));
  return found.map(({ ord, id }) => ({ ord, ...records.get(id)! }));
}
