import { sql, type RawBuilder } from 'kysely';
import type { TagRow } from '../db/schema.js';

// The one home of the tag's shape: the columns every reader shows (the API's Tag), as Kysely
// selects them and as SQL embeds them in JSON, and the order tags are listed in.

export const TAG_COLUMNS = ['id', 'name', 'color', 'active'] as const;

/** A stored tag: the API's Tag, with an id that is never null. */
export type StoredTag = Pick<TagRow, (typeof TAG_COLUMNS)[number]>;

const column = (tags: string, name: string) => sql.ref(`${tags}.${name}`);

/** The tag row `tags` as a JSON object of TAG_COLUMNS. */
export const tagJson = (tags: string): RawBuilder<StoredTag> => sql`json_build_object(${sql.join(TAG_COLUMNS.map((name) => sql`${sql.lit(name)}, ${column(tags, name)}`))})`;

/** The order tags are listed in: by name ignoring case, ties by the exact name, then by id. */
export const tagOrder = (tags: string): RawBuilder<unknown> => sql`lower(${column(tags, 'name')}), ${column(tags, 'name')}, ${column(tags, 'id')}`;

/**
 * The tags of one lead or company (its `ownerId` in workspace `workspaceId`), through its join
 * table, as a JSON array in tag order. Every table is matched on the workspace too, so Citus
 * keeps the subquery on the owner's node.
 */
export const tagsJsonOf = (
  joinTable: 'lead_tags' | 'company_tags',
  ownerColumn: 'lead_id' | 'company_id',
  ownerId: RawBuilder<unknown>,
  workspaceId: RawBuilder<unknown>,
): RawBuilder<StoredTag[]> => sql`
  coalesce((
    SELECT json_agg(${tagJson('t')} ORDER BY ${tagOrder('t')})
    FROM ${sql.table(joinTable)} AS j JOIN tags AS t ON t.workspace_id = j.workspace_id AND t.id = j.tag_id
    WHERE j.workspace_id = ${workspaceId} AND j.${sql.ref(ownerColumn)} = ${ownerId}
  ), '[]'::json)`;
