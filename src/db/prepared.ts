import { createHash } from 'node:crypto';
import { PostgresQueryCompiler, sql, type CompiledQuery, type RawBuilder } from 'kysely';
import type { Executor } from './connect.js';
import { nameStatement } from './statement-names.js';

// A hot statement whose SQL text does not change with its inputs (lists go in as array
// parameters) is built and compiled by Kysely once, when the module loads; a call then only
// computes the parameters. Building the same tree again on every request (`freeze`,
// `visitNode`, `parseStringReference`) is work the hottest routes would repeat for nothing.
//
// PostgreSQL also plans such a statement once per connection: the pool sends these texts as
// named statements (db/statement-names.ts, db/connect.ts), which PostgreSQL parses once and,
// after five executions, runs with a generic plan when that is no costlier: for statements
// this short, planning is a large share of their time. The statements are written so that
// a generic plan is a good one (key lookups probe the primary key whatever the statistics).
// Named statements need a session per client: no PgBouncer in transaction mode, which the
// service already excludes (docs/operations.md).

/** Where a named input goes in a prepared statement's text. */
class InputSlot {
  constructor(readonly name: string) {}
}

/**
 * Which statement this is: its repository (a path under src/, without `.ts`) and its name
 * there. Every statement's text is checked in under src/queries/ by this id (npm run queries),
 * so a change to a statement shows in review as a diff of SQL.
 */
export interface StatementId {
  repository: string;
  name: string;
}

/** Every prepared statement built so far in this process, by the modules that define them. */
const built: Array<{ id: StatementId; text: string }> = [];

/** The statements every module loaded so far has built (each is built once, when its module loads). */
export const preparedStatements = (): ReadonlyArray<{ id: StatementId; text: string }> => built;

/** The statement's inputs as placeholders for its builder: `${input.name}` becomes `$n`. */
export type Placeholders<Input> = { readonly [K in keyof Input]-?: RawBuilder<Input[K]> };

export class PreparedStatement<Input extends object, Row> {
  /** The SQL text, exactly as Kysely compiles the builder. */
  readonly text: string;
  /** The name of the statement on each connection (from its text). */
  readonly name: string;
  private readonly slots: ReadonlyArray<keyof Input>;
  private readonly node: CompiledQuery['query'];

  /**
   * `named: false` for a statement over a varying number of rows (a batch's 1 to 1,000): sent
   * unnamed, PostgreSQL plans it for each call's actual arrays instead of a generic plan.
   */
  constructor(
    readonly id: StatementId,
    build: (input: Placeholders<Input>) => RawBuilder<unknown>,
    options: { named: boolean } = { named: true },
  ) {
    const placeholders = new Proxy({}, { get: (_target, name) => sql.val(new InputSlot(String(name))) }) as Placeholders<Input>;
    const compiled = new PostgresQueryCompiler().compileQuery(build(placeholders).toOperationNode(), { queryId: 'prepared' });
    this.slots = compiled.parameters.map((parameter) => {
      // A value captured by the builder would be frozen into every call: inputs only.
      if (!(parameter instanceof InputSlot)) throw new Error(`prepared statement with a constant parameter (${String(parameter)}); make it an input`);
      return parameter.name as keyof Input;
    });
    this.text = compiled.sql;
    this.node = compiled.query;
    this.name = `prepared_${createHash('sha256').update(this.text).digest('hex').slice(0, 16)}`;
    if (options.named) nameStatement(this.text, this.name);
    built.push({ id, text: this.text });
  }

  /** The input each `$n` of the text stands for, in order. */
  get inputs(): ReadonlyArray<keyof Input> {
    return this.slots;
  }

  /** The parameters of one call, in the order of the text's `$n`. */
  parameters(input: Input): unknown[] {
    return this.slots.map((name) => input[name]);
  }

  /** The statement of one call, as Kysely would have compiled it. */
  compiled(input: Input): CompiledQuery<Row> {
    return { query: this.node, queryId: { queryId: 'prepared' }, sql: this.text, parameters: this.parameters(input) };
  }

  async execute(db: Executor, input: Input): Promise<Row[]> {
    const { rows } = await db.executeQuery(this.compiled(input));
    return rows;
  }
}
