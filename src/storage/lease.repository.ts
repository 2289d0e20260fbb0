import type { CallCheckpoint, ClaimedLease } from '../domain/call-checkpoint.ts';
import { decodeJsonOrNull, encodeJson } from './json-column.ts';
import type { Dialect, Executor, Store } from './store.ts';

/**
 * Leases on ongoing calls (table `call_leases`): the server holding a call renews its lease; a
 * lease that lapses is claimed by one server, which ends the call from its checkpoint.
 */
export class LeaseRepository {
  readonly #db: Executor;
  readonly #dialect: Dialect;

  constructor(store: Store) {
    this.#db = store.db;
    this.#dialect = store.dialect;
  }

  /** Gives `serverId` the call's lease until `expiresAt` (epoch ms); inside the join's transaction. */
  async insert(callId: string, serverId: string, expiresAt: number, db: Executor = this.#db): Promise<void> {
    await db.insertInto('call_leases').values({ call_id: callId, server_id: serverId, expires_at: expiresAt, checkpoint: null }).execute();
  }

  /** Extends the leases `serverId` still holds on `callIds` to `expiresAt`, in one statement; returns the calls it still holds. */
  async renew(serverId: string, callIds: readonly string[], expiresAt: number): Promise<string[]> {
    if (callIds.length === 0) return [];
    const rows = await this.#db
      .updateTable('call_leases')
      .set({ expires_at: expiresAt })
      .where('server_id', '=', serverId)
      .where('call_id', 'in', callIds)
      .returning('call_id')
      .execute();
    return rows.map((row) => row.call_id);
  }

  /** Saves the call's checkpoint if `serverId` still holds its lease; returns whether it did. */
  async checkpoint(callId: string, serverId: string, checkpoint: CallCheckpoint): Promise<boolean> {
    const result = await this.#db
      .updateTable('call_leases')
      .set({ checkpoint: encodeJson(checkpoint) })
      .where('call_id', '=', callId)
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * Takes over up to `limit` lapsed leases for `serverId` until `expiresAt`, in one statement, so
   * that of several servers sweeping at once each lease goes to one (PostgreSQL: the rows are
   * locked with SKIP LOCKED; SQLite has one writer). `othersLapsed`: every lease held by another
   * server counts as lapsed (the embedded store has one server: the others are gone).
   */
  async claimLapsed(serverId: string, nowMs: number, expiresAt: number, limit: number, othersLapsed: boolean): Promise<ClaimedLease[]> {
    const rows = await this.#db
      .updateTable('call_leases')
      .set({ server_id: serverId, expires_at: expiresAt })
      .where('call_id', 'in', (eb) => {
        let lapsed = eb
          .selectFrom('call_leases')
          .select('call_id')
          .where((w) => (othersLapsed ? w.or([w('expires_at', '<', nowMs), w('server_id', '!=', serverId)]) : w('expires_at', '<', nowMs)))
          .orderBy('expires_at')
          .limit(limit);
        if (this.#dialect === 'postgres') lapsed = lapsed.forUpdate().skipLocked();
        return lapsed;
      })
      .returning(['call_id', 'checkpoint'])
      .execute();
    return rows.map((row) => ({ callId: row.call_id, checkpoint: decodeJsonOrNull(row.checkpoint) }));
  }

  /** Removes the call's lease (the call has ended); inside the end's transaction. */
  async delete(callId: string, db: Executor = this.#db): Promise<void> {
    await db.deleteFrom('call_leases').where('call_id', '=', callId).execute();
  }
}
