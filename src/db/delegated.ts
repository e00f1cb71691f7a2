import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import type { Db, Executor } from './connect.js';
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
    await distributedFunction(db, this.functionName, this.definition);
    return true;
  }
}

/**
 * Makes the function `name` by `definition` and distributes it by its first argument, co-located
 * with the tenant tables, unless it is there already (under an advisory lock: every process may
 * be first).
 */
async function distributedFunction(db: Executor, name: string, definition: string): Promise<void> {
  const exists = async () =>
    (await sql<{ present: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_dist_object WHERE objid = to_regproc(${name})) AS present`.execute(db)).rows[0]!.present;
  if (await exists()) return;
  await db.connection().execute(async (connection) => {
    await sql`SELECT pg_advisory_lock(hashtext(${name}))`.execute(connection);
    try {
      if (await exists()) return;
      await sql.raw(definition).execute(connection);
      await sql`SELECT create_distributed_function(to_regproc(${name})::oid::regprocedure, '$1', colocate_with := ${ANCHOR}::text)`.execute(connection);
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtext(${name}))`.execute(connection);
    }
  });
}

// The statements of one workspace that must commit together, sent as one call to the node that
// holds it (the Citus executor's writes that commit alone: src/leads/citus-writes-repository.ts).
// Each statement names the workspace, so on the node Citus runs it on the local shard as a
// single-task statement; the call is one transaction there. The statements are sent as text
// with their parameters written in as literals, exactly as the driver would have sent them: one
// function runs any such list, and each statement keeps its one home in its repository.
const STEPS_SIGNATURE = '(workspace_id bigint, steps text[], answer text) RETURNS SETOF jsonb LANGUAGE plpgsql';
const STEPS_BODY =
  // JSON prints timestamps in the session's zone: the service's is UTC (src/db/connect.ts).
  `SET TimeZone TO 'UTC' AS $delegated$\nDECLARE step text;\nBEGIN\n` +
  `FOREACH step IN ARRAY steps LOOP EXECUTE step; END LOOP;\n` +
  `IF answer IS NOT NULL THEN RETURN QUERY EXECUTE 'SELECT to_jsonb(answer) FROM (' || answer || ') AS answer'; END IF;\nEND\n$delegated$`;
// Named by a digest of its text, as DelegatedStatement's are: a changed function is a new one.
const STEPS_FUNCTION = `delegated_workspace_steps_${createHash('sha256').update(`${STEPS_SIGNATURE}\n${STEPS_BODY}`).digest('hex').slice(0, 12)}`;
const STEPS_DEFINITION = `CREATE OR REPLACE FUNCTION ${STEPS_FUNCTION}${STEPS_SIGNATURE}\n${STEPS_BODY}`;
const stepsReady = new WeakMap<object, Promise<void>>();

// The driver's own text for a parameter (arrays, dates, buffers and JSON as it sends them).
const prepareValue = createRequire(import.meta.url)('pg/lib/utils.js').prepareValue as (value: unknown) => string | null;
const PLACEHOLDER = /\$(\d+)/g;

/** The statement with its parameters written in as literals (an untyped literal is typed by its place, as a parameter is). */
export function withLiterals({ sql: text, parameters }: CompiledQuery): string {
  return text.replace(PLACEHOLDER, (_match, n: string) => {
    const value = prepareValue(parameters[Number(n) - 1]);
    return value === null ? 'NULL' : pg.escapeLiteral(value);
  });
}

/**
 * Runs `steps`, statements of the workspace, in order as one call on a Citus coordinator: one
 * round trip to the workspace's node and one transaction there, committed alone (so not inside a
 * transaction: Citus delegates a call only outside one). Returns `answer`'s rows, a query run
 * last, as JSON objects (timestamps as JSON writes them: formatTimestamp reads both).
 */
export async function runOnWorkspaceNode<Row>(db: Db, workspaceId: number, steps: readonly CompiledQuery[], answer: CompiledQuery | null): Promise<Row[]> {
  let ready = stepsReady.get(db);
  if (!ready) {
    stepsReady.set(db, (ready = distributedFunction(db, STEPS_FUNCTION, STEPS_DEFINITION)));
    ready.catch(() => stepsReady.delete(db));
  }
  await ready;
  const { rows } = await db.executeQuery(
    CompiledQuery.raw(`SELECT ${STEPS_FUNCTION}($1, $2, $3) AS answer`, [workspaceId, steps.map(withLiterals), answer && withLiterals(answer)]) as CompiledQuery<{ answer: Row }>,
  );
  return rows.map(({ answer }) => answer);
}
