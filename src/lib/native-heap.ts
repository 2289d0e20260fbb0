// The process's native (C) heap, glibc's malloc, through the optional package koffi: what it holds
// and giving its free pages back to the system. glibc gives every thread that calls malloc an arena
// of its own (up to 8 per core), and memory freed in an arena stays in the process's RSS until the
// arena is trimmed; an arena outlives the thread that made it. The embedded decoders load their
// model (~100 MB) through malloc on threads that come and go, so the server trims once they are
// freed (decoder-pool.ts). Elsewhere (another libc, koffi missing) both calls report nothing.
import { createRequire } from 'node:module';

/** glibc's mallinfo2(), summed over every arena, bytes. */
export interface NativeHeapStats {
  /** Bytes the arenas hold from the system (sbrk and their mmapped heaps). */
  arenaBytes: number;
  /** Of which allocated. */
  inUseBytes: number;
  /** Of which free (given back or not: mallinfo2 does not say which free pages are still resident). */
  freeBytes: number;
  /** Allocations large enough to have a mapping of their own (returned to the system when freed). */
  mmappedBytes: number;
}

interface Libc {
  trim(pad: number): Promise<number>;
  info(): Record<string, number | bigint>;
}

let libc: Libc | null | undefined;

function load(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== 'linux') return libc;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as {
      load(path: string): { func(name: string, result?: unknown, args?: unknown[]): ((...args: unknown[]) => unknown) & { async(...args: unknown[]): void } };
      struct(name: string, fields: Record<string, string>): unknown;
    };
    const c = koffi.load('libc.so.6');
    const fields = ['arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost'];
    const mallinfo2 = koffi.struct('mallinfo2', Object.fromEntries(fields.map((f) => [f, 'size_t'])));
    const trim = c.func('int malloc_trim(size_t pad)');
    const info = c.func('mallinfo2', mallinfo2, []);
    libc = {
      // On a libuv thread: the walk over the arenas does not hold up the event loop's audio.
      trim: (pad) => new Promise((resolve, reject) => trim.async(pad, (e: Error | null, r: number) => (e ? reject(e) : resolve(r)))),
      info: () => info() as Record<string, number | bigint>,
    };
  } catch {
    // Not glibc (musl has neither call), or koffi is not installed: nothing to trim or report.
  }
  return libc;
}

/**
 * Gives the free pages of every malloc arena back to the system (glibc's malloc_trim(0)), on a
 * libuv thread; resolves true when it ran. Costs a walk over the arenas' free chunks, so it is
 * called when memory was freed in bulk, never per frame.
 */
export async function trimNativeHeap(): Promise<boolean> {
  const c = load();
  if (!c) return false;
  await c.trim(0);
  return true;
}

/** The malloc arenas' totals (glibc's mallinfo2), or undefined where there is no glibc through koffi. */
export function nativeHeapStats(): NativeHeapStats | undefined {
  const c = load();
  if (!c) return undefined;
  const m = c.info();
  const n = (k: string) => Number(m[k] ?? 0);
  return { arenaBytes: n('arena'), inUseBytes: n('uordblks'), freeBytes: n('fordblks'), mmappedBytes: n('hblkhd') };
}
