import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import type { ReceivedRequest } from '../../test/support/receiver.js';
import type { LogLine } from '../../test/support/service.js';
import { VIP_TAG, type Answer, type Ledger, type Person } from './traffic.js';

// What the fault test requires, checked against what the traffic saw, the database and the
// webhook receiver. Every check adds a line to `failures` when it does not hold.

export const ANSWER_BUDGET_MS = 2000;
export const RECOVERY_BUDGET_MS = 5000;

export interface Timeline {
  /** Fast shutdown asked for. */
  stopBegin: number;
  /** The server process has exited. */
  downAt: number;
  /** Starting it again. */
  startBegin: number;
  /** It accepts connections again. */
  upAt: number;
}

export interface Verdict {
  figures: Record<string, string | number>;
  failures: string[];
}

const isSuccess = (answer: { status: number }) => answer.status >= 200 && answer.status < 300;
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

/** Answers during and after the outage: 503 at once with its body and Retry-After, success again within 5 s, no 500/401 ever. */
export function checkAnswers(answers: Answer[], readiness: Array<{ startedAt: number; ms: number; status: number }>, timeline: Timeline, verdict: Verdict): void {
  const { failures, figures } = verdict;
  const byStatus = new Map<number, number>();
  for (const answer of answers) byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
  figures['requests sent'] = answers.length;
  figures['answers per status'] = [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status === 0 ? 'none' : status}: ${count}`)
    .join(', ');

  for (const answer of answers) {
    if (isSuccess(answer)) continue;
    if (answer.status !== 503) {
      failures.push(
        `${answer.kind} at +${answer.startedAt - timeline.stopBegin} ms from the stop: ${answer.status === 0 ? `no answer (${String(answer.body)})` : `${answer.status} ${JSON.stringify(answer.body)}`}`,
      );
      continue;
    }
    const body = answer.body as { error?: unknown; message?: unknown };
    if (body?.error !== 'service_unavailable' || typeof body.message !== 'string' || !/^\d+$/.test(answer.retryAfter ?? '')) {
      failures.push(`a 503 without the documented body and Retry-After: ${JSON.stringify(body)} Retry-After ${answer.retryAfter}`);
    }
  }

  const duringOutage = answers.filter((answer) => answer.startedAt >= timeline.stopBegin && answer.startedAt <= timeline.upAt);
  const longest = Math.max(0, ...duringOutage.map((answer) => answer.ms));
  figures['requests during the outage'] = duringOutage.length;
  figures['longest answer during the outage (ms)'] = longest;
  figures['longest answer after the database was back (ms)'] = Math.max(0, ...answers.filter((answer) => answer.startedAt > timeline.upAt).map((answer) => answer.ms));
  figures['longest answer overall (ms)'] = Math.max(0, ...answers.map((answer) => answer.ms));
  if (longest >= ANSWER_BUDGET_MS) failures.push(`an answer during the outage took ${longest} ms (budget ${ANSWER_BUDGET_MS} ms)`);
  const whileDown = answers.filter((answer) => answer.startedAt >= timeline.downAt && answer.startedAt + answer.ms <= timeline.startBegin);
  const notUnavailable = whileDown.filter((answer) => answer.status !== 503);
  if (whileDown.length === 0) failures.push('no request was sent while the database was down');
  if (notUnavailable.length > 0) failures.push(`${notUnavailable.length} requests sent while the database was down were not answered 503 (e.g. ${notUnavailable[0]!.status})`);

  const firstSuccess = answers
    .filter((answer) => answer.startedAt >= timeline.upAt && isSuccess(answer))
    .reduce<number | null>((first, answer) => Math.min(first ?? Infinity, answer.startedAt + answer.ms), null);
  if (firstSuccess === null) {
    failures.push('no request succeeded after the database came back');
  } else {
    figures['database up -> first success (s)'] = seconds(firstSuccess - timeline.upAt);
    if (firstSuccess - timeline.upAt > RECOVERY_BUDGET_MS)
      failures.push(`the first success came ${firstSuccess - timeline.upAt} ms after the database was back (budget ${RECOVERY_BUDGET_MS} ms)`);
  }
  const lateFailures = answers.filter((answer) => answer.startedAt >= timeline.upAt + RECOVERY_BUDGET_MS && !isSuccess(answer));
  if (lateFailures.length > 0)
    failures.push(`${lateFailures.length} requests failed more than ${RECOVERY_BUDGET_MS} ms after the database was back (e.g. ${lateFailures[0]!.status})`);

  const probesDown = readiness.filter((probe) => probe.startedAt >= timeline.downAt && probe.startedAt + probe.ms <= timeline.startBegin);
  figures['/readyz while down'] =
    `${seconds(timeline.startBegin - timeline.downAt)} s down: ${probesDown.length} probes, ${probesDown.filter((probe) => probe.status === 503).length} answered 503, longest ${Math.max(0, ...probesDown.map((probe) => probe.ms))} ms`;
  if (probesDown.length === 0 || probesDown.some((probe) => probe.status !== 503 || probe.ms >= ANSWER_BUDGET_MS))
    failures.push(`/readyz while down: ${figures['/readyz while down']}`);
  const probesLate = readiness.filter((probe) => probe.startedAt >= timeline.upAt + RECOVERY_BUDGET_MS);
  if (probesLate.some((probe) => probe.status !== 200)) failures.push('/readyz still not 200 five seconds after the database came back');
}

interface LeadRow {
  id: number;
  name: string;
  job_title: string | null;
  emails: string[];
  tags: string[];
}

/** Every acknowledged write is saved as sent (or as a later, unanswered write of the same person left it); one lead per person. */
export async function checkLeads(db: pg.Client, workspaceId: number, ledger: Ledger, verdict: Verdict): Promise<Map<string, LeadRow>> {
  const { rows } = await db.query<LeadRow>(
    `
    SELECT l.id::int, l.name, l.job_title, l.emails,
      coalesce(array_agg(t.name ORDER BY t.name) FILTER (WHERE t.name IS NOT NULL), '{}') AS tags
    FROM leads l LEFT JOIN lead_tags lt ON lt.workspace_id = l.workspace_id AND lt.lead_id = l.id
      LEFT JOIN tags t ON t.workspace_id = lt.workspace_id AND t.id = lt.tag_id
    WHERE l.workspace_id = $1 GROUP BY l.id, l.workspace_id`,
    [workspaceId],
  );
  const byEmail = new Map<string, LeadRow[]>();
  for (const row of rows) for (const email of row.emails) byEmail.set(email, [...(byEmail.get(email) ?? []), row]);

  const leads = new Map<string, LeadRow>();
  let checked = 0;
  for (const person of ledger.people.values()) {
    const found = byEmail.get(person.email) ?? [];
    if (found.length > 1) verdict.failures.push(`${person.email}: ${found.length} leads, not one`);
    const lead = found[0];
    if (lead) leads.set(person.email, lead);
    if (!person.writes.some((write) => write.acknowledged)) continue;
    checked += 1;
    if (!lead) {
      verdict.failures.push(`${person.email}: acknowledged, but no lead has this email`);
      continue;
    }
    const problem = differenceFromSent(person, lead);
    if (problem) verdict.failures.push(`${person.email} (lead ${lead.id}): ${problem}`);
  }
  verdict.figures['leads checked (acknowledged people)'] = checked;
  verdict.figures['leads in the workspace'] = rows.length;
  return leads;
}

function differenceFromSent(person: Person, lead: LeadRow): string | null {
  const lastAcknowledged = person.writes.findLastIndex((write) => write.acknowledged);
  // The last acknowledged write, or one sent after it that was not acknowledged (a commit can
  // race the outage), or one never answered (it may have been applied at any time).
  const possible = person.writes.filter((write, index) => index === lastAcknowledged || index > lastAcknowledged || write.acknowledged === null);
  if (lead.name !== person.name) return `name ${lead.name}, sent ${person.name}`;
  if (!possible.some((write) => write.jobTitle === lead.job_title)) return `job_title ${lead.job_title}, expected one of ${possible.map((write) => write.jobTitle).join(', ')}`;
  const mustHave = new Set(person.writes.filter((write) => write.acknowledged).flatMap((write) => write.tags));
  const mayHave = new Set(person.writes.flatMap((write) => write.tags));
  const missing = [...mustHave].filter((tag) => !lead.tags.includes(tag));
  const extra = lead.tags.filter((tag) => !mayHave.has(tag));
  if (missing.length > 0 || extra.length > 0) return `tags ${lead.tags.join(',')}: missing ${missing.join(',') || '-'}, never sent ${extra.join(',') || '-'}`;
  const ids = new Set(person.writes.flatMap((write) => (write.acknowledged && write.leadId !== null ? [write.leadId] : [])));
  if ([...ids].some((id) => id !== lead.id)) return `answered with lead ids ${[...ids].join(',')}, stored as ${lead.id}`;
  return null;
}

/** Same key, same body: one execution, identical 2xx answers, no record left without its answer. */
export async function checkIdempotency(db: pg.Client, ledger: Ledger, verdict: Verdict): Promise<void> {
  let replays = 0;
  for (const call of ledger.idempotent) {
    const successes = call.answers.filter(isSuccess);
    if (successes.length === 0) {
      verdict.failures.push(`Idempotency-Key ${call.key}: never answered 2xx (${call.answers.map((answer) => answer.status).join(',')})`);
      continue;
    }
    const executed = successes.filter((answer) => !answer.replayed);
    replays += successes.length - executed.length;
    if (executed.length > 1) verdict.failures.push(`Idempotency-Key ${call.key}: executed ${executed.length} times`);
    // Deep equality: a stored answer comes back from jsonb, which orders keys its own way.
    const first = successes[0]!;
    const differing = successes.find((answer) => answer.status !== first.status || !isDeepStrictEqual(answer.body, first.body));
    if (differing)
      verdict.failures.push(
        `Idempotency-Key ${call.key}: 2xx answers differ: ${first.status} ${JSON.stringify(first.body)} and ${differing.status} ${JSON.stringify(differing.body)}`,
      );
  }
  const { rows } = await db.query<{ open: number }>('SELECT count(*)::int AS open FROM idempotency_records WHERE status_code IS NULL OR response_body IS NULL');
  verdict.figures['idempotent calls checked'] = `${ledger.idempotent.length} (${replays} replays)`;
  verdict.figures['idempotency records left in progress'] = rows[0]!.open;
  if (rows[0]!.open > 0) verdict.failures.push(`${rows[0]!.open} idempotency records have no stored answer`);
}

interface EventRow {
  id: number;
  topic: string;
  lead_id: number;
  tag_id: number | null;
  processed: boolean;
}
interface WorkflowRow {
  id: number;
  trigger: string;
  tag_id: number | null;
}
interface DeliveryRow {
  outbox_id: number | null;
  workflow_id: number | null;
  message_id: string;
  branch: string;
}

/**
 * Each event of the workspace fanned out exactly once per workflow it fires (one delivery row
 * per event and workflow), each delivery Delivered and its webhook-id received at least once;
 * each acknowledged lead has its lead.created event, each VIP-tagged lead its tag_added event.
 */
export async function checkDeliveries(
  db: pg.Client,
  workspaceId: number,
  leads: Map<string, LeadRow>,
  received: ReceivedRequest[],
  verdict: Verdict,
  options: { exactlyOnce?: boolean } = {},
): Promise<void> {
  // One after the other: one client runs one query at a time.
  const events = await db.query<EventRow>(
    `SELECT id::int, topic, (payload->>'lead_id')::int AS lead_id, (payload->>'tag_id')::int AS tag_id, processed_at IS NOT NULL AS processed
      FROM outbox WHERE workspace_id = $1 AND topic IN ('lead.created', 'lead.tag_added')`,
    [workspaceId],
  );
  const workflows = await db.query<WorkflowRow>('SELECT id::int, trigger, tag_id::int FROM workflows WHERE workspace_id = $1', [workspaceId]);
  const deliveries = await db.query<DeliveryRow>('SELECT outbox_id::int, workflow_id::int, message_id, branch FROM deliveries WHERE workspace_id = $1', [workspaceId]);
  const receivedIds = new Map<string, number>();
  for (const request of received) {
    const id = String(request.headers['webhook-id'] ?? '');
    receivedIds.set(id, (receivedIds.get(id) ?? 0) + 1);
  }
  const rowsFor = new Map<string, DeliveryRow[]>();
  for (const delivery of deliveries.rows) {
    const key = `${delivery.outbox_id}:${delivery.workflow_id}`;
    rowsFor.set(key, [...(rowsFor.get(key) ?? []), delivery]);
  }
  const failures: string[] = [];
  let checked = 0;
  let missing = 0;
  for (const event of events.rows) {
    if (!event.processed) failures.push(`event ${event.id} (${event.topic}) never processed`);
    const firing = workflows.rows.filter((workflow) =>
      event.topic === 'lead.created' ? workflow.trigger === 'lead_created' : workflow.trigger === 'tag_added' && workflow.tag_id === event.tag_id,
    );
    for (const workflow of firing) {
      const rows = rowsFor.get(`${event.id}:${workflow.id}`) ?? [];
      checked += rows.length;
      if (rows.length !== 1) failures.push(`event ${event.id} workflow ${workflow.id}: ${rows.length} delivery rows, not 1`);
      for (const row of rows) {
        if (row.branch !== 'Delivered') failures.push(`event ${event.id} workflow ${workflow.id}: branch ${row.branch}`);
        if (!receivedIds.has(row.message_id)) {
          missing += 1;
          failures.push(`event ${event.id} workflow ${workflow.id}: webhook-id ${row.message_id} never received`);
        }
      }
    }
  }
  const createdFor = new Map<number, number>();
  const vipFor = new Map<number, number>();
  const vipTagIds = new Set(workflows.rows.filter((workflow) => workflow.trigger === 'tag_added').map((workflow) => workflow.tag_id));
  for (const event of events.rows) {
    if (event.topic === 'lead.created') createdFor.set(event.lead_id, (createdFor.get(event.lead_id) ?? 0) + 1);
    else if (vipTagIds.has(event.tag_id)) vipFor.set(event.lead_id, (vipFor.get(event.lead_id) ?? 0) + 1);
  }
  for (const [email, lead] of leads) {
    if (createdFor.get(lead.id) !== 1) failures.push(`${email} (lead ${lead.id}): ${createdFor.get(lead.id) ?? 0} lead.created events, not 1`);
    if (lead.tags.includes(VIP_TAG) && vipFor.get(lead.id) !== 1) failures.push(`${email} (lead ${lead.id}): ${vipFor.get(lead.id) ?? 0} tag_added events for ${VIP_TAG}, not 1`);
  }
  const ours = deliveries.rows.filter((row) => receivedIds.has(row.message_id));
  const repeated = ours.filter((row) => receivedIds.get(row.message_id)! > 1);
  const repeats = ours.reduce((sum, row) => sum + receivedIds.get(row.message_id)! - 1, 0);
  if (options.exactlyOnce) {
    // A webhook-id no delivery row holds: its fan-out was lost after it was sent, and the
    // event went out again under another webhook-id, a duplicate no receiver can recognise.
    const known = new Set(deliveries.rows.map((row) => row.message_id));
    const unknown = [...receivedIds.keys()].filter((id) => !known.has(id));
    verdict.figures['webhook-ids missing / received more than once / unknown'] = `${missing} / ${repeated.length} / ${unknown.length}`;
    for (const row of repeated) failures.push(`webhook-id ${row.message_id} received ${receivedIds.get(row.message_id)} times, not once`);
    for (const id of unknown) failures.push(`webhook-id ${id} received, but no delivery has it (a lost fan-out sent again under a new id)`);
  }
  verdict.failures.push(...failures.slice(0, 20), ...(failures.length > 20 ? [`... and ${failures.length - 20} more delivery problems`] : []));
  verdict.figures['outbox events checked'] = events.rows.length;
  verdict.figures['deliveries checked (rows, each received)'] = checked;
  verdict.figures['webhook requests received'] = `${received.length} (${repeats} repeats of a webhook-id, allowed: at least once)`;
}

/** An outage is logged once per source (a pool, a connection, a worker), not once per request or poll; no 500 was logged. */
export function checkLogs(name: string, logs: LogLine[], verdict: Verdict): void {
  const errors = logs.filter((line) => (line.level ?? 0) >= 50);
  const counts = new Map<string, number>();
  for (const line of errors) {
    const source = `${String(line.pool ?? '')} ${String(line.msg)}`.trim();
    counts.set(source, (counts.get(source) ?? 0) + 1);
  }
  verdict.figures[`error lines logged by ${name}`] = errors.length;
  for (const [source, count] of counts) {
    if (count > 1) verdict.failures.push(`${name} logged "${source}" ${count} times (once per outage expected)`);
    if (/unhandled error|request errored|uncaught|failed unexpectedly/.test(source)) verdict.failures.push(`${name} logged "${source}"`);
  }
}

/** Prints each run's verdict and figures; true when every run passed. */
export function printVerdicts(results: Record<string, Verdict>): boolean {
  for (const [name, verdict] of Object.entries(results)) {
    process.stdout.write(`\n${name}: ${verdict.failures.length === 0 ? 'PASS' : 'FAIL'}\n`);
    for (const [figure, value] of Object.entries(verdict.figures)) process.stdout.write(`  ${figure.padEnd(48)} ${value}\n`);
    for (const failure of verdict.failures.slice(0, 30)) process.stdout.write(`  FAILED: ${failure}\n`);
    if (verdict.failures.length > 30) process.stdout.write(`  ... and ${verdict.failures.length - 30} more failures\n`);
  }
  return Object.values(results).every((verdict) => verdict.failures.length === 0);
}
