import type { RawData } from 'ws';

/** A `ws` message's bytes as one Buffer, whichever form the library handed it in. */
export function wsDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
