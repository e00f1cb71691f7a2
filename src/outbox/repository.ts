import type { Executor } from '../db/connect.js';

// Events written in the same transaction as the change that caused them.
export type OutboxEvent =
  | { topic: 'lead.created'; payload: { lead_id: number } }
  | { topic: 'lead.tag_added'; payload: { lead_id: number; tag_id: number } }
  | { topic: 'company.analyze'; payload: { company_id: number } };

export async function enqueue(db: Executor, workspaceId: number, events: readonly OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.insertInto('outbox')
    .values(events.map((event) => ({ workspace_id: workspaceId, topic: event.topic, payload: JSON.stringify(event.payload) })))
    .execute();
}
