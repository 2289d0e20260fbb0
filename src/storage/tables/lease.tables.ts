import type { CallCheckpoint } from '../../domain/call-checkpoint.ts';
import type { JsonText } from '../json-column.ts';

/** The `call_leases` table (migration 0006): one row per ongoing call, held by one server. */
export interface CallLeaseTable {
  call_id: string;
  /** The holder: a server process's id (Runtime.serverId). */
  server_id: string;
  /** Epoch ms after which the lease has lapsed unless renewed. */
  expires_at: number;
  /** The call's last checkpoint; null until the first utterance. */
  checkpoint: JsonText<CallCheckpoint> | null;
}

export interface LeaseTables {
  call_leases: CallLeaseTable;
}
