import { createHash } from 'node:crypto';
import { CompiledQuery, sql } from 'kysely';
import type { Executor } from './connect.js';
import { citusIsPresent, ANCHOR } from './distribution.js';
import type { PreparedStatement } from './prepared.js';

// On a Citus coordinator, a statement over one workspace that Citus cannot route whole (a
// data-modifying CTE that inserts what another CTE returned is planned as subplans: each a round
// trip, their intermediate results copied to every node, and the transaction then committed on
// both workers with two-phase commit) runs instead inside a function distributed by its
// workspace argument and co-located with the tenant tables. The coordinator sends the call to
// the node that holds the workspace, in one round trip, and the statement runs there on local
// shards (Citus's delegation of function calls; only outside a transaction block).
//
// The function is the statement's own text, so there is one home for it: its `$n` become the
// function's arguments, and its name carries a digest of its text and arguments, so a changed
// statement makes a new function rather than running an old one. It is made the first time it is
// called on a database, under an advisory lock (PL/pgSQL: Citus plans a SQL function's
// parameters nowhere). On plain PostgreSQL the statement runs as it is.

export class DelegatedStatement<Input extends object, Row> {
  readonly functionName: string;
  private readonly definition: string;
  private readonly call: string;
  private readonly arguments: ReadonlyArray<keyof Input>;
  private readonly ready = new WeakMap<object, Promise<boolean>>();

  /**
   * `args`: every input of the statement with its SQL type, the workspace first (the function is
   * distributed by it); `returns`: the statement's columns with their types.
   */
  constructor(
    private readonly statement: PreparedStatement<Input, Row>,
    args: ReadonlyArray<readonly [keyof Input & string, string]>,
    returns: ReadonlyArray<readonly [string, string]>,
  ) {
    const names = args.map(([name]) => name);
    const missing = statement.inputs.filter((input) => !names.includes(input as keyof Input & string));
    if (missing.length > 0) throw new Error(`${statement.id.name}: no argument type for ${missing.join(', ')}`);
    const body = statement.text.replace(/\$(\d+)/g, (_match, n: string) => `$${names.indexOf(statement.inputs[Number(n) - 1] as keyof Input & string) + 1}`);
    const signature = args.map(([, type]) => type).join(', ');
    const columns = returns.map(([name, type]) => `${name} ${type}`).join(', ');
    const digest = createHash('sha256').update(`${signature}\n${columns}\n${body}`).digest('hex').slice(0, 12);
    this.functionName = `delegated_${statement.id.name.toLowerCase()}_${digest}`;
    this.definition =
      `CREATE OR REPLACE FUNCTION ${this.functionName}(${signature}) RETURNS TABLE (${columns}) LANGUAGE plpgsql AS $delegated$\n` +
      `#variable_conflict use_column\nBEGIN\nRETURN QUERY\n${body};\nEND\n$delegated$`;
    this.call = `SELECT * FROM ${this.functionName}(${args.map((_arg, index) => `$${index + 1}`).join(', ')})`;
    this.arguments = names;
  }

  async execute(db: Executor, input: Input): Promise<Row[]> {
    if (!(await this.delegates(db))) return this.statement.execute(db, input);
    const { rows } = await db.executeQuery(
      CompiledQuery.raw(
        this.call,
        this.arguments.map((name) => input[name]),
      ) as CompiledQuery<Row>,
    );
    return rows;
  }

  /** Whether the database is a Citus coordinator, the function made there (once per database handle). */
  private delegates(db: Executor): Promise<boolean> {
    let known = this.ready.get(db);
    if (!known) {
      known = this.create(db);
      known.catch(() => this.ready.delete(db));
      this.ready.set(db, known);
    }
    return known;
  }

  private async create(db: Executor): Promise<boolean> {
    if (!(await citusIsPresent(db))) return false;
    const exists = async () =>
      (await sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_dist_object WHERE objid = to_regproc(${this.functionName})) AS present`.execute(db)).rows[0]!.present;
    if (await exists()) return true;
    await db.connection().execute(async (connection) => {
      await sql`SELECT pg_advisory_lock(hashtext(${this.functionName}))`.execute(connection);
      try {
        if (await exists()) return;
        await sql.raw(this.definition).execute(connection);
        await sql`SELECT create_distributed_function(to_regproc(${this.functionName})::oid::regprocedure, '$1', colocate_with := ${ANCHOR}::text)`.execute(connection);
      } finally {
        await sql`SELECT pg_advisory_unlock(hashtext(${this.functionName}))`.execute(connection);
      }
    });
    return true;
  }
}
