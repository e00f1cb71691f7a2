import { sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from '../db/connect.js';
import type { Placeholders } from '../db/prepared.js';
import { jsonParameter, type JsonbParameter } from '../db/sql.js';

// The outbox: events written in the same transaction as the change that caused them, and
// drained by the worker. Every statement on the outbox table is in this file.

export type OutboxEvent =
  | { topic: 'lead.created'; payload: { lead_id: number } }
  | { topic: 'lead.tag_added'; payload: { lead_id: number; tag_id: number } }
  | { topic: 'company.analyze'; payload: { company_id: number } }
  /** An erased lead's notice to every endpoint that received it (src/erasure/): ids only, never the person. */
  | { topic: 'lead.erased'; payload: LeadErasedPayload };

export interface LeadErasedPayload {
  lead_id: number;
  crm_record_id: string | null;
  connector_ids: number[];
  workflow_ids: number[];
}

export type OutboxTopic = OutboxEvent['topic'];

const OUTBOX_TOPICS: readonly OutboxTopic[] = ['lead.created', 'lead.tag_added', 'company.analyze', 'lead.erased'];

export type CompanyAnalyzeEvent = Extract<OutboxEvent, { topic: 'company.analyze' }>;

/** An event as stored, of the given topics. */
export type StoredEvent<Topic extends OutboxTopic> = Extract<OutboxEvent, { topic: Topic }> & { id: number; workspace_id: number; attempts: number };

/**
 * An event of a lead that the statement writing it creates: `lead.created` takes the new
 * lead's id there (see newLeadEvents).
 */
export type NewLeadEvent = { topic: 'lead.created' } | CompanyAnalyzeEvent;

/** An event to write, with the trace context of the request that caused it (src/tracing/spans.ts, storedTraceContext). */
export type TracedEvent = OutboxEvent & { trace?: string | null };

export async function enqueue(db: Executor, workspaceId: number, events: readonly TracedEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db
    .insertInto('outbox')
    .values(events.map((event) => ({ workspace_id: workspaceId, topic: event.topic, payload: jsonParameter(event.payload), trace_context: event.trace ?? null })))
    .execute();
}

/**
 * enqueue's statement for events written on the workspace's node (runOnWorkspaceNode), with their
 * ids taken from the coordinator's sequence (`ids`, one per event, in order): a default there
 * would draw from that node's own range of the sequence, and the outbox is read in id order.
 */
export const enqueueWithIds = (workspaceId: number, events: readonly TracedEvent[], ids: readonly number[]) => sql`
  INSERT INTO outbox (id, workspace_id, topic, payload, trace_context) OVERRIDING SYSTEM VALUE
  VALUES ${sql.join(events.map((event, position) => sql`(${ids[position]!}::bigint, ${workspaceId}::bigint, ${event.topic}, ${jsonParameter(event.payload)}::jsonb, ${event.trace ?? null})`))}`;

/**
 * The inputs of newLeadEvents, one entry per event: the lead's `ord`, the topic, the payload;
 * and each lead's trace context by its `ord` (the request's that wrote it).
 */
export interface NewLeadEventInputs {
  eventOrds: number[];
  eventTopics: string[];
  eventPayloads: Array<JsonbParameter | null>;
  leadTraces: Array<string | null>;
}

export function newLeadEventInputs(events: ReadonlyArray<{ ord: number; event: NewLeadEvent }>, leadTraces: Array<string | null>): NewLeadEventInputs {
  return {
    eventOrds: events.map(({ ord }) => ord),
    eventTopics: events.map(({ event }) => event.topic),
    eventPayloads: events.map(({ event }) => (event.topic === 'lead.created' ? null : jsonParameter(event.payload))),
    leadTraces,
  };
}

/** The trace context of the lead `ord` of a statement's rows (NewLeadEventInputs' leadTraces; `ord` counts from 0). */
export const leadTraceOf = (input: Placeholders<Pick<NewLeadEventInputs, 'leadTraces'>>, ord: RawBuilder<number>) => sql<string | null>`(${input.leadTraces}::text[])[${ord} + 1]`;

/**
 * The part of a (prepared) statement that writes the events of the leads it creates: the
 * events by the lead's `ord` (see newLeadEventInputs), written in the order given for the
 * leads of `leads` (a FROM item of the statement with `ord` and `id`).
 */
export function newLeadEvents(workspaceId: RawBuilder<number>, leads: string, input: Placeholders<NewLeadEventInputs>) {
  return sql`INSERT INTO outbox (workspace_id, topic, payload, trace_context)
    SELECT ${workspaceId}, e.topic, CASE WHEN e.topic = 'lead.created' THEN jsonb_build_object('lead_id', l.id) ELSE e.payload END, ${leadTraceOf(input, sql`l.ord`)}
    FROM unnest(${input.eventOrds}::int[], ${input.eventTopics}::text[], ${input.eventPayloads}::jsonb[]) WITH ORDINALITY AS e(ord, topic, payload, n)
    JOIN ${sql.table(leads)} AS l USING (ord)
    ORDER BY e.n`;
}

/**
 * Due lead events, locked (SKIP LOCKED) until the caller's transaction ends: it fans them
 * out and marks them processed in that transaction, so each is fanned out exactly once.
 */
/** A lead event with when it occurred (a paused workflow skips what occurred before it was resumed). */
/**
 * The part of the merge statement (mergeIntoLeads, src/leads/write-repository.ts) that writes
 * the events of the leads it updates, in the rows' order: each lead's events given by its `ord`
 * (see newLeadEventInputs), then a `lead.tag_added` per tag the statement attached to it. Over
 * that statement's FROM items `merged` (`ord`, `id`), `tagged` (`lead_id`, `tag_id`, the tags
 * attached) and `tag_rows` (`ord`, `tag_id`, `n`, the tags asked for); `carried` is what else
 * each event carries from `merged` (its workspace, across workspaces), read by `workspaceId`.
 */
export function mergedLeadEvents(at: { workspaceId: RawBuilder<unknown>; carried: RawBuilder<unknown> }, input: Placeholders<NewLeadEventInputs>) {
  return sql`INSERT INTO outbox (workspace_id, topic, payload, trace_context)
    SELECT ${at.workspaceId}, e.topic, e.payload, ${leadTraceOf(input, sql`e.ord`)} FROM (
      SELECT ${at.carried}merged.ord, 1 AS part, given.n, given.topic, given.payload
      FROM unnest(${input.eventOrds}::int[], ${input.eventTopics}::text[], ${input.eventPayloads}::jsonb[]) WITH ORDINALITY AS given(ord, topic, payload, n)
      JOIN merged USING (ord)
      UNION ALL
      SELECT ${at.carried}merged.ord, 2, tag_rows.n, 'lead.tag_added', jsonb_build_object('lead_id', tagged.lead_id, 'tag_id', tagged.tag_id)
      FROM tagged JOIN merged ON merged.id = tagged.lead_id JOIN tag_rows ON tag_rows.ord = merged.ord AND tag_rows.tag_id = tagged.tag_id
    ) AS e
    ORDER BY e.ord, e.part, e.n`;
}

export type LeadEvent = StoredEvent<LeadEventTopic> & { created_at: string; trace_context: string | null };

/** The topics the fan-out turns into deliveries. */
export const LEAD_EVENT_TOPICS = ['lead.created', 'lead.tag_added', 'lead.erased'] as const;
export type LeadEventTopic = (typeof LEAD_EVENT_TOPICS)[number];

export async function lockDueLeadEvents(trx: Executor, workspaceId: number, limit: number): Promise<LeadEvent[]> {
  const { rows } = await sql<LeadEvent>`
    SELECT id, workspace_id, attempts, topic, payload, created_at, trace_context FROM outbox
    WHERE workspace_id = ${workspaceId} AND processed_at IS NULL AND available_at <= now() AND topic = ANY(${sql.val([...LEAD_EVENT_TOPICS])}::text[])
    ORDER BY id LIMIT ${limit}
    FOR UPDATE SKIP LOCKED
  `.execute(trx);
  return rows;
}

export async function markProcessed(db: Executor, workspaceId: number, ids: readonly number[]): Promise<void> {
  await db
    .updateTable('outbox')
    .set({ processed_at: new Date(), locked_by: null, locked_until: null })
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', [...ids])
    .execute();
}

/**
 * Claims due website analyses for this worker under a lease, committed at once (the analysis
 * calls the network); a claim whose lease ran out (its worker died) is claimable again.
 */
export async function claimAnalyses(db: Db, workspaceId: number, workerId: string, limit: number, leaseMs: number): Promise<Array<StoredEvent<'company.analyze'>>> {
  const { rows } = await sql<StoredEvent<'company.analyze'>>`
    UPDATE outbox AS o
    SET locked_by = ${workerId}, locked_until = now() + make_interval(secs => ${leaseMs / 1000}), attempts = o.attempts + 1
    FROM (
      SELECT id FROM outbox
      WHERE workspace_id = ${workspaceId} AND processed_at IS NULL AND topic = 'company.analyze' AND available_at <= now()
        AND (locked_until IS NULL OR locked_until < now())
      ORDER BY id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE o.workspace_id = ${workspaceId} AND o.id = due.id
    RETURNING o.id, o.workspace_id, o.attempts, o.topic, o.payload
  `.execute(db);
  return rows;
}

/** Marks a claimed event processed while this worker still holds it; false when it no longer does. */
export async function finishClaimed(db: Executor, event: EventRef, workerId: string, lastError: string | null): Promise<boolean> {
  const finished = await db
    .updateTable('outbox')
    .set({ processed_at: new Date(), locked_by: null, locked_until: null, last_error: lastError })
    .where('workspace_id', '=', event.workspace_id)
    .where('id', '=', event.id)
    .where('locked_by', '=', workerId)
    .where('processed_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return finished !== undefined;
}

/** Gives a claimed event back to be tried again after `delaySeconds`, while this worker still holds it. */
export async function retryClaimedLater(db: Executor, event: EventRef, workerId: string, reason: string, delaySeconds: number): Promise<void> {
  await db
    .updateTable('outbox')
    .set({ locked_by: null, locked_until: null, last_error: reason.slice(0, 500), available_at: sql`now() + make_interval(secs => ${delaySeconds})` })
    .where('workspace_id', '=', event.workspace_id)
    .where('id', '=', event.id)
    .where('locked_by', '=', workerId)
    .execute();
}

/** An event by its key. */
export interface EventRef {
  id: number;
  workspace_id: number;
}

/**
 * The workspaces with due events of these topics, those after `after` first (then from the
 * lowest), at most `limit`: the worker serves them in turn, so one busy workspace never holds
 * the others back. Reads every shard on Citus, without locking anything.
 */
export async function dueEventWorkspaces(db: Executor, topics: readonly OutboxTopic[], after: number, limit: number): Promise<number[]> {
  const { rows } = await sql<{ workspace_id: number }>`
    SELECT workspace_id FROM outbox
    WHERE processed_at IS NULL AND available_at <= now() AND topic = ANY(${[...topics]}::text[])
      AND (locked_until IS NULL OR locked_until < now())
    GROUP BY workspace_id
    ORDER BY workspace_id <= ${after}, workspace_id
    LIMIT ${limit}
  `.execute(db);
  return rows.map((row) => row.workspace_id);
}

/** Gives back the claims this worker holds (shutdown): another worker may take them at once. */
export async function releaseClaims(db: Executor, workerId: string): Promise<void> {
  await db.updateTable('outbox').set({ locked_by: null, locked_until: null }).where('locked_by', '=', workerId).where('processed_at', 'is', null).execute();
}

/** Deletes events processed more than 7 days ago. */
export async function purgeProcessed(db: Executor): Promise<void> {
  await db
    .deleteFrom('outbox')
    .where(sql<boolean>`processed_at < now() - interval '7 days'`)
    .execute();
}

/**
 * Per topic (every topic, 0 when none): the events not processed yet and the age of the
 * oldest in seconds. Reads the pending rows through the partial index outbox_pending_idx.
 */
export async function pendingEventsByTopic(db: Executor): Promise<Array<{ topic: OutboxTopic; pending: number; oldestAgeSeconds: number }>> {
  const { rows } = await sql<{ topic: OutboxTopic; pending: number; oldest_age_seconds: number }>`
    SELECT t.topic, count(o.id)::int AS pending,
      coalesce(extract(epoch FROM now() - min(o.created_at)), 0)::float8 AS oldest_age_seconds
    FROM unnest(${sql.val(OUTBOX_TOPICS)}::text[]) AS t(topic)
    LEFT JOIN outbox AS o ON o.topic = t.topic AND o.processed_at IS NULL
    GROUP BY t.topic ORDER BY t.topic
  `.execute(db);
  return rows.map((row) => ({ topic: row.topic, pending: row.pending, oldestAgeSeconds: row.oldest_age_seconds }));
}
