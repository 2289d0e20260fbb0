/** A piece of a call's recording: channel 0 the user's track, 1 the agent's, 2 the final WAV. */
export interface RecordingChunkTable {
  call_id: string;
  channel: number;
  /** Where `bytes` start in the track or the WAV file. */
  byte_offset: number;
  bytes: Uint8Array;
}

export interface RecordingTables {
  recording_chunks: RecordingChunkTable;
}
