import { groupBy } from '../../group-by.js';
import type { BatchLookup, IdentityMatch, IntakeLookup, MatchKey } from '../lookup-repository.js';
import { checkReferences, duplicateRejection, strongestMatch, type References, type StrongestMatch } from './match.js';
import type { PreparedLead } from './prepare.js';
import { detailsOf, setCompany, type SetCompany } from './set-company.js';
import { DuplicateRejected, RowRejected } from './rejections.js';
import { sameOptions, type IntakeOptions, type IntakeRow, type WriteRequest } from './write-request.js';

// The planner: what a write group's rows do and the statements that do it, decided from the
// requests and what their lookup found, with no database. The executor (executor.ts) runs the
// plan; it alone knows which statements and which database carry it out.

/** Requests whose rows run as one set: their indexes, and the first, whose workspace and switches they share. */
export interface Run {
  first: WriteRequest<unknown>;
  members: number[];
}

/** A run as the planner and the executor take it: its workspace, its members' rows in order, its switches. */
export interface RunInput {
  workspaceId: number;
  rows: readonly IntakeRow[];
  options: IntakeOptions;
  dryRun: boolean;
}

/** Same workspace and switches: rows of consecutive such requests run as one set. */
const sameRun = (a: WriteRequest<unknown>, b: WriteRequest<unknown>) => a.workspaceId === b.workspaceId && a.dryRun === b.dryRun && sameOptions(a.options, b.options);

/**
 * The requests to run (indexes, in arrival order) as runs: a workspace's requests together, in
 * their order (another workspace's requests between them change nothing for them), split where
 * the switches change.
 */
export function runsOf(requests: ReadonlyArray<WriteRequest<unknown>>, running: readonly number[]): Run[] {
  const runs: Run[] = [];
  for (const index of [...groupBy(running, (index) => requests[index]!.workspaceId).values()].flat()) {
    const last = runs.at(-1);
    if (last && sameRun(last.first, requests[index]!)) last.members.push(index);
    else runs.push({ first: requests[index]!, members: [index] });
  }
  return runs;
}

export const runInputOf =
  (requests: ReadonlyArray<WriteRequest<unknown>>) =>
  ({ first, members }: Run): RunInput => ({
    workspaceId: first.workspaceId,
    rows: members.flatMap((index) => requests[index]!.rows),
    options: first.options,
    dryRun: first.dryRun,
  });

/**
 * The group's runs when its lookup may be read before any transaction, so that it may commit
 * alone: no request sends an Idempotency-Key (its claim decides first whether the request runs
 * at all), none is a dry run, every row is answered with its lead (POST /leads; on Citus,
 * `anyAnswer`, a batch's rows too: its executor commits either alone), each workspace has one
 * run, and several workspaces only where statements may span them. Otherwise null.
 */
export function lookedUpFirst(requests: ReadonlyArray<WriteRequest<unknown>>, severalWorkspaces: boolean, anyAnswer = false): Run[] | null {
  if (!requests.every((request) => request.idempotency === null && !request.dryRun && request.rows.every((row) => anyAnswer || row.wantsRecord))) return null;
  const runs = runsOf(requests, [...requests.keys()]);
  const workspaces = new Set(runs.map((run) => run.first.workspaceId));
  return workspaces.size === runs.length && (runs.length === 1 || severalWorkspaces) ? runs : null;
}

/**
 * The runs whose statements span their workspaces: those of a workspace no other run of the
 * group is of, dry runs aside (each of their rows is undone on its own). None unless at least
 * two: one workspace's run costs the same either way.
 */
export function runsAcrossWorkspaces(runs: readonly Run[]): Run[] {
  const runsOfWorkspace = groupBy(runs, (run) => run.first.workspaceId);
  const shared = runs.filter(({ first }) => !first.dryRun && runsOfWorkspace.get(first.workspaceId)!.length === 1);
  return shared.length >= 2 ? shared : [];
}

/**
 * What becomes of one row: `create` a new person or `merge` into the lead it matches, by a set
 * statement with rows like it; `alone`, one row at a time (`view`: its part of the lookup,
 * when that is all it needs); `rejected` without a write.
 */
export type RowPlan =
  | { kind: 'create'; references: References; company: SetCompany }
  | { kind: 'merge'; references: References; company: SetCompany; match: StrongestMatch; matches: IdentityMatch[] }
  | { kind: 'alone'; view?: IntakeLookup }
  | { kind: 'rejected'; rejected: RowRejected | DuplicateRejected };

/** A row of the plan: its run's position and its index among the run's rows. */
export interface RowRef {
  run: number;
  index: number;
}

/** A statement writing rows of one kind (of one workspace, or of several), or one row alone. */
export type Step = { write: 'create' | 'merge'; workspaces: 'one' | 'several'; rows: RowRef[] } | { alone: RowRef };

export interface Plan {
  /** Each run's rows, what becomes of each. */
  rows: RowPlan[][];
  /** The statements and rows alone, in the order they run. */
  steps: Step[];
  /** One statement writes every row, committing alone (no transaction around it). */
  commitsAlone: boolean;
}

/** A create or merge whose company (if any) and tags all exist: its statement needs nothing written before it. */
export const needsNothingBefore = (row: RowPlan): boolean =>
  (row.kind === 'create' || row.kind === 'merge') &&
  row.references.missingTagNames.length === 0 &&
  (row.company === null || ('id' in row.company && row.company.fill === undefined));

/** One row's view of its run's lookup, as a row alone would read it (by-name candidates aside); `companies`: the lookup's companies by id and by domain. */
function rowLookup(batch: BatchLookup, companies: ReadonlyMap<number | string, number>, lead: PreparedLead): IntakeLookup {
  const company = lead.company;
  return {
    tags: batch.tags,
    matches: batch.matches.length === 0 ? [] : batch.matches.filter((match) => lead.identities.some((key) => key.kind === match.kind && key.value === match.value)),
    companyById: company?.id != null ? (companies.get(company.id) ?? null) : null,
    companyByDomain: company?.domain != null ? (companies.get(company.domain) ?? null) : null,
    companyByName: null,
  };
}

/**
 * The rule of set statements, row by row. A row whose references do not hold is rejected. A row
 * whose company follows the company rule and none of whose match keys another row of the run
 * sends either certainly creates a new person (none of its keys is held) or, under on_duplicate
 * update, merges into the lead it matches, unless an earlier row of the run merges into that lead
 * (the later one must see the earlier's update: it runs alone); under on_duplicate error it is
 * rejected. Such rows are independent of each other, so writing them together is writing them one
 * by one. Every other row runs alone, with its view of the lookup when no other row of the run
 * shares a key with it or may create a tag or company it names (a lookup read a moment ago is
 * as good as one read now: concurrent writers are settled by the match keys' claims either way).
 * A dry run, or a run without a lookup, runs every row alone.
 */
function planRows({ rows, options, dryRun }: RunInput, lookup: BatchLookup | undefined): RowPlan[] {
  if (dryRun || !lookup) return rows.map(() => ({ kind: 'alone' }));
  const keyOf = (key: MatchKey) => `${key.kind}\u0000${key.value}`;
  const sent = groupBy(
    rows.flatMap((row) => row.lead.identities),
    keyOf,
  );
  const updated = new Set<number>();
  const companies = new Map<number | string, number>(
    lookup.companies.flatMap((company) => [[company.id, company.id] as const, ...(company.domain !== null ? [[company.domain, company.id] as const] : [])]),
  );
  /** The details each company (by id, or by the domain a row of the run creates) is filled in or created with by the run's statements: another row's other details for it run alone, in their order. */
  const fills = new Map<number | string, string>();
  /** The domains of new companies that a row of the run creates (it creates or updates a lead): later rows fill in the company it made. */
  const created = new Set<string>();
  /** The names of new companies with details the run's statements resolve: a second domain for one name runs alone (the name's domainless company takes one domain). */
  const names = new Set<string>();
  return rows.map(({ lead }): RowPlan => {
    const view = rowLookup(lookup, companies, lead);
    let references: References;
    try {
      references = checkReferences(view, lead, options);
    } catch (error) {
      if (error instanceof RowRejected) return { kind: 'rejected', rejected: error };
      throw error;
    }
    const shared = lead.identities.some((key) => sent.get(keyOf(key))!.length > 1);
    const companySettled = lead.company === null || lead.company.id !== null || (lead.company.domain !== null && view.companyByDomain !== null);
    const complete = companySettled && references.missingTagNames.length === 0 && !shared;
    const alone: RowPlan = complete ? { kind: 'alone', view } : { kind: 'alone' };
    const match = strongestMatch(lead.identities, view.matches);
    if (match && !shared && options.onDuplicate === 'error') return { kind: 'rejected', rejected: duplicateRejection(match) };
    const writes = !match || options.onDuplicate === 'update';
    const company = setCompany(lead, view, created);
    const newName = company && 'newCompany' in company ? company.newCompany.name?.toLowerCase() : undefined;
    const creates = company && ('newCompany' in company ? company.newCompany.domain : 'newDomain' in company ? company.newDomain : null);
    /** The row runs alone: a company it creates is there for the later rows of its domain. */
    const runsAlone = () => {
      const domain = lead.company?.domain;
      if (writes && !shared && domain && (company === undefined || creates)) created.add(domain);
      return alone;
    };
    if (company === undefined || shared || (newName !== undefined && names.has(newName))) return runsAlone();
    const fill = detailsOf(company);
    if (fill) {
      const details = JSON.stringify(fill.details);
      if ((fills.get(fill.key) ?? details) !== details) return runsAlone();
      fills.set(fill.key, details);
    }
    let plan: RowPlan;
    if (!match) plan = { kind: 'create', references, company };
    else if (options.onDuplicate !== 'update' || updated.has(match.leadId)) return runsAlone();
    else {
      updated.add(match.leadId);
      plan = { kind: 'merge', references, company, match, matches: view.matches };
    }
    if (creates) created.add(creates);
    if (newName !== undefined) names.add(newName);
    return plan;
  });
}

/** A run's steps: its rows in order, consecutive rows of one kind written by one statement (so its events are in the rows' order). */
function stepsOfRun(run: number, rows: readonly RowPlan[]): Step[] {
  const steps: Step[] = [];
  let statement: Extract<Step, { write: unknown }> | null = null;
  rows.forEach((row, index) => {
    if (row.kind === 'rejected') return;
    if (row.kind === 'alone') {
      statement = null;
      steps.push({ alone: { run, index } });
      return;
    }
    if (statement?.write !== row.kind) steps.push((statement = { write: row.kind, workspaces: 'one', rows: [] }));
    statement.rows.push({ run, index });
  });
  return steps;
}

/**
 * The plan of runs, each with its lookup (none: its rows run alone). `severalWorkspaces`: the
 * runs are of different workspaces and a statement may span them: every run whose rows all
 * create people, or all merge, with companies and tags that exist shares one statement with
 * the others like it (creates first); any other run has statements of its own. `mayCommitAlone`:
 * when every row creates a person whose company and tags exist, one statement writes them all,
 * committing alone.
 */
export function planRuns(
  runs: readonly RunInput[],
  lookups: ReadonlyArray<BatchLookup | undefined>,
  { severalWorkspaces, mayCommitAlone }: { severalWorkspaces: boolean; mayCommitAlone: boolean },
): Plan {
  const rows = runs.map((run, position) => planRows(run, lookups[position]));
  const allOf = (kind: 'create' | 'merge') => (position: number) => rows[position]!.every((row) => row.kind === kind && needsNothingBefore(row));
  const refsOf = (positions: readonly number[]) => positions.flatMap((run) => rows[run]!.map((_, index) => ({ run, index })));
  const statement = (write: 'create' | 'merge', positions: number[]): Step => ({
    write,
    workspaces: new Set(positions.map((run) => runs[run]!.workspaceId)).size > 1 ? 'several' : 'one',
    rows: refsOf(positions),
  });
  const positions = [...runs.keys()];
  if (mayCommitAlone && positions.every(allOf('create'))) return { rows, steps: [statement('create', positions)], commitsAlone: true };

  const steps: Step[] = [];
  const creating = severalWorkspaces ? positions.filter(allOf('create')) : [];
  const merging = severalWorkspaces ? positions.filter((position) => !creating.includes(position) && allOf('merge')(position)) : [];
  if (creating.length > 0) steps.push(statement('create', creating));
  if (merging.length > 0) steps.push(statement('merge', merging));
  for (const position of positions) if (!creating.includes(position) && !merging.includes(position)) steps.push(...stepsOfRun(position, rows[position]!));
  return { rows, steps, commitsAlone: false };
}
