import { beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { Db } from '../../src/db/connect.js';
import { createMigrator } from '../../src/db/migrate.js';
import { migrationTestDatabase } from '../support/migration-database.js';

// Migration 0003 on companies stored by the hosts that intake used to keep as sent.

const database = migrationTestDatabase('migration', '0002_outbound');
let db: Db;
beforeAll(() => {
  db = database.db();
});

describe('0003_registrable_company_domains', () => {
  it('moves each company to its registrable domain, one holder per domain, and clears public suffixes', async () => {
    const [first, second] = await db
      .insertInto('workspaces')
      .values([{ name: 'First' }, { name: 'Second' }])
      .returning('id')
      .execute();
    const stored: Array<[number, string | null, string]> = [
      [first!.id, 'mail.acme.co.uk', 'mail.acme.co.uk'],
      [first!.id, 'Acme UK', 'acme.co.uk'],
      [first!.id, 'eu.acme.co.uk', 'eu.acme.co.uk'],
      [first!.id, 'Globex', 'www2.globex.com'],
      [first!.id, 'shop.initech.io', 'shop.initech.io'],
      [first!.id, 'Initech App', 'app.initech.io'],
      [first!.id, 'com', 'com'],
      [first!.id, 'Local', '127.0.0.1'],
      [first!.id, 'localhost', 'localhost'],
      [first!.id, 'Plain', 'plain.com'],
      [second!.id, 'mail.acme.co.uk', 'mail.acme.co.uk'],
    ];
    const ids = [];
    for (const [workspaceId, companyName, domain] of stored) {
      const row = await db.insertInto('companies').values({ workspace_id: workspaceId, name: companyName, domain, status: 'analyzed' }).returning('id').executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    const lead = await db.insertInto('leads').values({ workspace_id: first!.id, name: 'Kept', source: 'api', company_id: ids[0]! }).returning('id').executeTakeFirstOrThrow();

    const { results, error } = await createMigrator(db).migrateTo('0003_registrable_company_domains');
    expect(error).toBeUndefined();
    expect(results?.map((result) => [result.migrationName, result.status])).toEqual([['0003_registrable_company_domains', 'Success']]);

    const after = await db.selectFrom('companies').select(['id', 'workspace_id', 'name', 'domain']).orderBy('id').execute();
    expect(after.map((company) => [company.name, company.domain])).toEqual([
      ['mail.acme.co.uk', null], // acme.co.uk is held exactly by the next company
      ['Acme UK', 'acme.co.uk'],
      ['eu.acme.co.uk', null],
      ['Globex', 'globex.com'],
      ['initech.io', 'initech.io'], // the oldest of its domain; its placeholder name follows
      ['Initech App', null],
      ['com', null], // only a public suffix
      ['Local', '127.0.0.1'],
      ['localhost', 'localhost'],
      ['Plain', 'plain.com'],
      ['acme.co.uk', 'acme.co.uk'], // another workspace
    ]);
    const kept = await db.selectFrom('leads').where('id', '=', lead.id).select('company_id').executeTakeFirstOrThrow();
    expect(kept.company_id).toBe(ids[0]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM companies`.execute(db);
    expect(rows[0]!.n).toBe(stored.length);
  });
});
