import { type Expression, type Kysely, type SqlBool, type Updateable, sql } from 'kysely';
import type { Call, CallChanges, CallDirection, CallType } from '../domain/call.ts';
import type { CallStatus, DisconnectionReason } from '../domain/call-status.ts';
import { Batcher } from '../lib/batcher.ts';
import { CompiledStatement } from './compiled.ts';
import { decodeJsonOrNull, encodeJsonOrNull } from './json-column.ts';
import type { Database } from './schema.ts';
import type { Dialect, Executor, Store } from './store.ts';
import { CALL_JSON_FIELDS, type CallTable, type IdempotencyKeyTable } from './tables/call.tables.ts';

type CallRow = CallTable;

/** Every column of `calls`, in the order of the compiled INSERT. */
const CALL_COLUMNS = [
  'call_id', 'account_id', 'call_type', 'agent_id', 'agent_version', 'agent_name', 'call_status',
  'data_storage_setting', 'created_at', 'start_timestamp', 'end_timestamp', 'duration_ms',
  'disconnection_reason', 'metadata', 'agent_override', 'service_llm_dynamic_variables',
  'override_dynamic_variables', 'custom_attributes', 'current_node_id', 'current_state', 'transcript',
  'transcript_object', 'transcript_with_tool_calls', 'recording_path', 'call_analysis', 'latency', 'media', 'from_number', 'to_number', 'direction', 'telephony_identifier', 'transfer_destination', 'token_id', 'token_expires_at',
  'token_used_at', 'updated_at',
] as const satisfies ReadonlyArray<keyof CallRow>;
/** Fails to type-check if a column of CallTable is missing from CALL_COLUMNS. */
const CALL_COLUMNS_COMPLETE: [Exclude<keyof CallRow, (typeof CALL_COLUMNS)[number]>] extends [never] ? true : false = true;
void CALL_COLUMNS_COMPLETE;
/** Rows per group-committed INSERT. Measured at 50 connections: 8 → 21 %, 24-32 → 31 %, 200 → 22-24 % of the baseline: small enough that waves of requests do not wait in lock-step for one commit, large enough to share its cost. */
const INSERT_BATCH_MAX = 32;

const JSON_FIELDS: ReadonlySet<string> = new Set(CALL_JSON_FIELDS);

/** A stored row as the service's Call: JSON fields parsed. */
function decodeCall(row: CallRow): Call {
  return {
    ...row,
    metadata: decodeJsonOrNull(row.metadata),
    agent_override: decodeJsonOrNull(row.agent_override),
    service_llm_dynamic_variables: decodeJsonOrNull(row.service_llm_dynamic_variables),
    override_dynamic_variables: decodeJsonOrNull(row.override_dynamic_variables),
    custom_attributes: decodeJsonOrNull(row.custom_attributes),
    transcript_object: decodeJsonOrNull(row.transcript_object),
    transcript_with_tool_calls: decodeJsonOrNull(row.transcript_with_tool_calls),
    call_analysis: decodeJsonOrNull(row.call_analysis),
    latency: decodeJsonOrNull(row.latency),
    media: decodeJsonOrNull(row.media),
  };
}

function encodeCall(call: Call): CallRow {
  return {
    ...call,
    metadata: encodeJsonOrNull(call.metadata),
    agent_override: encodeJsonOrNull(call.agent_override),
    service_llm_dynamic_variables: encodeJsonOrNull(call.service_llm_dynamic_variables),
    override_dynamic_variables: encodeJsonOrNull(call.override_dynamic_variables),
    custom_attributes: encodeJsonOrNull(call.custom_attributes),
    transcript_object: encodeJsonOrNull(call.transcript_object),
    transcript_with_tool_calls: encodeJsonOrNull(call.transcript_with_tool_calls),
    call_analysis: encodeJsonOrNull(call.call_analysis),
    latency: encodeJsonOrNull(call.latency),
    media: encodeJsonOrNull(call.media),
  };
}

/** Column changes from call changes: JSON fields encoded, everything else as is. */
function encodeChanges(changes: CallChanges): Updateable<CallRow> {
  const columns: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(changes)) {
    if (value !== undefined) columns[field] = JSON_FIELDS.has(field) ? encodeJsonOrNull(value) : value;
  }
  return columns;
}

function insertText(rows: number): string {
  const tuple = `(${CALL_COLUMNS.map(() => '?').join(', ')})`;
  return `insert into calls (${CALL_COLUMNS.join(', ')}) values ${Array.from({ length: rows }, () => tuple).join(', ')}`;
}

/**
 * PostgreSQL: each row comes with a guard (its agent's latest version as the server last read it,
 * or null for none) and is inserted only if the agent still has that latest version; RETURNING
 * says which were. One statement, so a create-web-call whose agent head is remembered takes one
 * round trip. A cluster-wide check (e.g. a shared rate-limit bucket) folds in the same way: one
 * more condition in the WHERE, one more CTE.
 */
function guardedInsertText(rows: number): string {
  const tuple = `(?::integer, ${CALL_COLUMNS.map((column) => `?::${CALL_COLUMN_CASTS[column] ?? 'text'}`).join(', ')})`;
  return (
    `insert into calls (${CALL_COLUMNS.join(', ')}) select ${CALL_COLUMNS.map((column) => `v.${column}`).join(', ')} ` +
    `from (values ${Array.from({ length: rows }, () => tuple).join(', ')}) as v (guard, ${CALL_COLUMNS.join(', ')}) ` +
    'where v.guard is null or exists (select 1 from agents a where a.id = v.agent_id and a.account_id = v.account_id and a.latest_version = v.guard) ' +
    'returning call_id'
  );
}

/** The columns an update-call's changes depend on: `updateIfUnchanged` writes only if none changed since the read. */
const UPDATE_GUARD_COLUMNS = ['call_status', 'data_storage_setting', 'custom_attributes', 'override_dynamic_variables', 'updated_at'] as const;

/** A call as read, with the stored values `updateIfUnchanged` compares. */
export interface VersionedCall {
  call: Call;
  stored: Pick<CallRow, (typeof UPDATE_GUARD_COLUMNS)[number]>;
}

/** A comparison of a numeric column with a value (Retell's number filter ops). */
export interface NumberCondition {
  op: 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le';
  value: number;
}

const SQL_OPS = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' } as const;

/** list-calls' filters (services/call-filters.ts reads both wire shapes into this). Every field present must hold. */
export interface CallFilter {
  agentIds?: string[];
  /** The calls of any of these agents; with `versions`, of those versions only. */
  agents?: Array<{ agentId: string; versions?: number[] }>;
  statuses?: CallStatus[];
  types?: CallType[];
  directions?: CallDirection[];
  reasons?: DisconnectionReason[];
  /** Keeps the calls whose `call_analysis.call_successful` is one of these. */
  successful?: boolean[];
  /** Conditions on the columns; a call whose column is null matches none. */
  startTimestamp?: NumberCondition[];
  endTimestamp?: NumberCondition[];
  durationMs?: NumberCondition[];
  /** Text search (any case): call_id, transcript or a top-level metadata value contains it. */
  text?: string;
}

export interface CallListQuery extends CallFilter {
  accountId: string;
  descending: boolean;
  limit: number;
  /** Continue after this call (exclusive), in the same order. */
  after?: { createdAt: number; callId: string };
}

/** PostgreSQL types of the columns whose values are not text, for the casts in the guarded INSERT. */
const CALL_COLUMN_CASTS: Partial<Record<(typeof CALL_COLUMNS)[number], string>> = {
  agent_version: 'integer',
  created_at: 'bigint',
  start_timestamp: 'bigint',
  end_timestamp: 'bigint',
  duration_ms: 'bigint',
  token_expires_at: 'bigint',
  token_used_at: 'bigint',
  updated_at: 'bigint',
};

/** A new call waiting in the group commit, with the agent version its insert checks, and the outcome. */
interface PendingInsert {
  row: CallRow;
  /** Insert only if the agent's latest version is still this (undefined: no check). */
  guard: number | undefined;
  inserted: boolean;
}

/** A LIKE pattern that finds `text` anywhere, its wildcards escaped (with `escape '\\'`). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * list-calls' `filter_criteria.query`: call_id, the transcript or a top-level metadata value
 * contains the text, in any case (SQLite's LIKE folds ASCII letters only; PostgreSQL's ILIKE folds
 * all). Metadata is stored as JSON text: its values are read with json_each / jsonb_each_text, so
 * keys never match. No index serves it: it reads the account's calls in the other filters' range.
 */
function textMatches(dialect: Dialect, text: string): Expression<SqlBool> {
  const pattern = containsPattern(text);
  if (dialect === 'postgres') {
    return sql<SqlBool>`(calls.call_id ilike ${pattern} escape '\\' or calls.transcript ilike ${pattern} escape '\\'
      or exists (select 1 from jsonb_each_text(calls.metadata::jsonb) as m where m.value ilike ${pattern} escape '\\'))`;
  }
  return sql<SqlBool>`(calls.call_id like ${pattern} escape '\\' or calls.transcript like ${pattern} escape '\\'
    or exists (select 1 from json_each(calls.metadata) as m where m.value like ${pattern} escape '\\'))`;
}

/** list-calls' `filter_criteria.call_successful`: the analysis' boolean, read from its JSON text. */
function callSuccessfulIn(dialect: Dialect, values: boolean[]): Expression<SqlBool> {
  if (dialect === 'postgres') {
    const texts = values.map((v) => String(v));
    return sql<SqlBool>`(calls.call_analysis::jsonb ->> 'call_successful') in (${sql.join(texts)})`;
  }
  // json_extract gives JSON true / false as 1 / 0.
  return sql<SqlBool>`json_extract(calls.call_analysis, '$.call_successful') in (${sql.join(values.map((v) => (v ? 1 : 0)))})`;
}

export class CallRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: Dialect;
  /** New calls outside a caller's transaction are group-committed: one multi-row INSERT per turn. */
  readonly #inserts: Batcher<PendingInsert>;

  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
    this.#db = store.db;
    this.#dialect = store.dialect;
    // Columns named, not `*`: a prepared statement whose result shape a later migration changes
    // would fail on PostgreSQL ("cached plan must not change result type") during a rolling upgrade.
    this.#findVersioned = new CompiledStatement(store, `select ${CALL_COLUMNS.join(', ')} from calls where call_id = ? and account_id = ?`);
    this.#inserts = new Batcher(async (pending) => {
      const guarded = this.#dialect === 'postgres';
      const width = CALL_COLUMNS.length + (guarded ? 1 : 0);
      const parameters = new Array<unknown>(pending.length * width);
      let i = 0;
      for (const { row, guard } of pending) {
        if (guarded) parameters[i++] = guard ?? null;
        for (const column of CALL_COLUMNS) parameters[i++] = row[column];
      }
      const statement = this.#insertStatement(pending.length);
      if (!guarded) {
        await statement.all(this.#db, parameters);
        for (const item of pending) item.inserted = true;
        return;
      }
      const inserted = new Set((await statement.all(this.#db, parameters)).map((row) => row.call_id));
      for (const item of pending) item.inserted = inserted.has(item.row.call_id);
    }, INSERT_BATCH_MAX);
  }

  /** Multi-row INSERT statements by row count, compiled once each (see CompiledStatement). */
  readonly #insertStatements = new Map<number, CompiledStatement<{ call_id: string }>>();
  #insertStatement(rows: number): CompiledStatement<{ call_id: string }> {
    let statement = this.#insertStatements.get(rows);
    if (!statement) {
      statement = new CompiledStatement(this.#store, this.#dialect === 'postgres' ? guardedInsertText(rows) : insertText(rows));
      this.#insertStatements.set(rows, statement);
    }
    return statement;
  }

  /**
   * Resolves once the call is committed (with `db`, once it is written in that transaction), to
   * whether it was: with a `guard` (PostgreSQL, outside a transaction), the call is written only
   * if its agent still exists under its account with `guard` as its latest version, so a
   * remembered agent head costs no read; false means the agent changed since (read it again).
   */
  async insert(call: Call, db?: Executor, guard?: number): Promise<boolean> {
    const row = encodeCall(call);
    if (db) {
      await db.insertInto('calls').values(row).execute();
      return true;
    }
    const pending: PendingInsert = { row, guard, inserted: false };
    await this.#inserts.submit(pending);
    return pending.inserted;
  }

  readonly #findVersioned: CompiledStatement<CallRow>;
  /** Conditional UPDATE statements by the columns they set (see updateIfUnchanged). */
  readonly #guardedUpdates = new Map<string, CompiledStatement<{ call_id: string }>>();

  /** The call and the stored values `updateIfUnchanged` compares (one prepared statement). */
  async findVersioned(accountId: string, callId: string): Promise<VersionedCall | undefined> {
    const row = await this.#findVersioned.first(this.#db, [callId, accountId]);
    if (!row) return undefined;
    return {
      call: decodeCall(row),
      stored: {
        call_status: row.call_status,
        data_storage_setting: row.data_storage_setting,
        custom_attributes: row.custom_attributes,
        override_dynamic_variables: row.override_dynamic_variables,
        updated_at: row.updated_at,
      },
    };
  }

  /**
   * Compare-and-set: applies `changes` only if the call's status, storage setting, custom
   * attributes, dynamic variables and `updated_at` are still as `read` found them; returns whether
   * it did. One statement and no transaction: a read-modify-write that loses a race is retried by
   * its caller from a fresh read, and a writer that changes none of those columns never conflicts.
   */
  async updateIfUnchanged(read: VersionedCall, changes: CallChanges): Promise<boolean> {
    const columns = encodeChanges(changes);
    const names = Object.keys(columns);
    const key = names.join(',');
    let statement = this.#guardedUpdates.get(key);
    if (!statement) {
      const same = this.#dialect === 'postgres' ? 'is not distinct from' : 'is';
      statement = new CompiledStatement(
        this.#store,
        `update calls set ${names.map((name) => `${name} = ?`).join(', ')} where call_id = ? and ` +
          `${UPDATE_GUARD_COLUMNS.map((name) => `${name} ${same} ?`).join(' and ')} returning call_id`,
      );
      this.#guardedUpdates.set(key, statement);
    }
    const parameters = [...Object.values(columns), read.call.call_id, ...UPDATE_GUARD_COLUMNS.map((name) => read.stored[name])];
    return (await statement.all(this.#db, parameters)).length > 0;
  }

  async find(accountId: string, callId: string, db: Executor = this.#db): Promise<Call | undefined> {
    const row = await db.selectFrom('calls').selectAll().where('call_id', '=', callId).where('account_id', '=', accountId).executeTakeFirst();
    return row && decodeCall(row);
  }

  /** Reads a call for a read-modify-write inside `db`'s transaction (row-locked on PostgreSQL). */
  async findForUpdate(accountId: string, callId: string, db: Executor): Promise<Call | undefined> {
    let query = db.selectFrom('calls').selectAll().where('call_id', '=', callId).where('account_id', '=', accountId);
    if (this.#dialect === 'postgres') query = query.forUpdate();
    const row = await query.executeTakeFirst();
    return row && decodeCall(row);
  }

  async findById(callId: string, db: Executor = this.#db): Promise<Call | undefined> {
    const row = await db.selectFrom('calls').selectAll().where('call_id', '=', callId).executeTakeFirst();
    return row && decodeCall(row);
  }

  async update(callId: string, changes: CallChanges, db: Executor = this.#db): Promise<void> {
    await db.updateTable('calls').set(encodeChanges(changes)).where('call_id', '=', callId).execute();
  }

  /** Moves a call between statuses only if it is still in `from`; returns whether it did. */
  async transition(callId: string, from: CallStatus[], changes: CallChanges, db: Executor = this.#db): Promise<boolean> {
    const result = await db
      .updateTable('calls')
      .set(encodeChanges(changes))
      .where('call_id', '=', callId)
      .where('call_status', 'in', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Marks the call's token used, if it is unused, unexpired and the call still registered. */
  async claimToken(callId: string, tokenId: string, nowMs: number, db: Executor = this.#db): Promise<boolean> {
    const result = await db
      .updateTable('calls')
      .set({ token_used_at: nowMs, updated_at: nowMs })
      .where('call_id', '=', callId)
      .where('token_id', '=', tokenId)
      .where('token_used_at', 'is', null)
      .where('token_expires_at', '>=', nowMs)
      .where('call_status', '=', 'registered')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Registered calls whose token expired unused. */
  async findExpiredUnjoined(nowMs: number, limit: number): Promise<Call[]> {
    const rows = await this.#db
      .selectFrom('calls')
      .selectAll()
      .where('call_status', '=', 'registered')
      .where('token_used_at', 'is', null)
      .where('token_expires_at', '<', nowMs)
      .orderBy('token_expires_at')
      .limit(limit)
      .execute();
    return rows.map(decodeCall);
  }

  async list(query: CallListQuery): Promise<Call[]> {
    const direction = query.descending ? 'desc' : 'asc';
    let q = this.#db.selectFrom('calls').selectAll().where('account_id', '=', query.accountId);
    if (query.agentIds?.length) q = q.where('agent_id', 'in', query.agentIds);
    const agents = query.agents;
    if (agents?.length) {
      q = q.where((eb) =>
        eb.or(
          agents.map(({ agentId, versions }) =>
            versions ? eb.and([eb('agent_id', '=', agentId), eb('agent_version', 'in', versions)]) : eb('agent_id', '=', agentId),
          ),
        ),
      );
    }
    if (query.statuses?.length) q = q.where('call_status', 'in', query.statuses);
    if (query.types?.length) q = q.where('call_type', 'in', query.types);
    if (query.directions?.length) q = q.where('direction', 'in', query.directions);
    if (query.reasons?.length) q = q.where('disconnection_reason', 'in', query.reasons);
    if (query.successful?.length) q = q.where(callSuccessfulIn(this.#dialect, query.successful));
    const numeric = [
      ['start_timestamp', query.startTimestamp],
      ['end_timestamp', query.endTimestamp],
      ['duration_ms', query.durationMs],
    ] as const;
    for (const [column, conditions] of numeric) {
      for (const { op, value } of conditions ?? []) q = q.where(column, SQL_OPS[op], value);
    }
    if (query.text !== undefined) q = q.where(textMatches(this.#dialect, query.text));
    const after = query.after;
    if (after) {
      const op = query.descending ? '<' : '>';
      q = q.where((eb) =>
        eb.or([
          eb('created_at', op, after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('call_id', op, after.callId)]),
        ]),
      );
    }
    const rows = await q.orderBy('created_at', direction).orderBy('call_id', direction).limit(query.limit).execute();
    return rows.map(decodeCall);
  }

  async delete(accountId: string, callId: string, db: Executor = this.#db): Promise<boolean> {
    const result = await db.deleteFrom('calls').where('call_id', '=', callId).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * The account's calls registered or ongoing, counted inside `db`'s transaction under a lock on
   * the account's row (PostgreSQL; SQLite has one writer), so that concurrent creates on any
   * server count one after another.
   */
  async countLiveLocked(accountId: string, db: Executor): Promise<number> {
    if (this.#dialect === 'postgres') await db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
    const row = await db
      .selectFrom('calls')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      // Literal statuses: the partial index calls_live (migration 0007) matches them.
      .where(sql<boolean>`call_status in ('registered', 'ongoing')`)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async countByStatus(): Promise<Array<{ call_status: CallStatus; count: number }>> {
    const rows = await this.#db
      .selectFrom('calls')
      .select(['call_status', (eb) => eb.fn.countAll<number>().as('count')])
      .groupBy('call_status')
      .execute();
    return rows.map((row) => ({ call_status: row.call_status, count: Number(row.count) }));
  }

  async findIdempotencyKey(accountId: string, key: string, db: Executor = this.#db): Promise<IdempotencyKeyTable | undefined> {
    return db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
  }

  async putIdempotencyKey(row: IdempotencyKeyTable, db: Executor): Promise<void> {
    await db.deleteFrom('idempotency_keys').where('account_id', '=', row.account_id).where('idempotency_key', '=', row.idempotency_key).execute();
    await db.insertInto('idempotency_keys').values(row).execute();
  }

  async deleteIdempotencyKeysBefore(cutoffMs: number): Promise<void> {
    await this.#db.deleteFrom('idempotency_keys').where('created_at', '<', cutoffMs).execute();
  }
}
