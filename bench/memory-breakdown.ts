/**
 * Where a process's resident memory is, read from inside it: V8's heap (process.memoryUsage),
 * glibc's malloc arenas (mallinfo2 through koffi), and the resident pages of its mappings by
 * kind (/proc/self/smaps): the sbrk heap, glibc's per-thread arena heaps (64 MB reservations),
 * WebAssembly memories (Flite's), other anonymous mappings (V8's pages, large mallocs, thread
 * stacks) and files.
 */
import fs from 'node:fs';
import { collectGarbage } from '../src/lib/idle-memory.ts';
import { nativeHeapStats } from '../src/lib/native-heap.ts';

export interface MemoryBreakdown {
  rssMb: number;
  threads: number;
  v8: { heapUsedMb: number; heapTotalMb: number; externalMb: number; arrayBuffersMb: number };
  malloc: { arenaMb: number; inUseMb: number; freeMb: number; mmappedMb: number } | undefined;
  /** Resident MB of the mappings by kind. */
  resident: { brkHeapMb: number; arenaHeapsMb: number; arenaHeaps: number; wasmMb: number; wasmMemories: number; otherAnonMb: number; filesMb: number };
}

const MB = 1024 * 1024;
/** glibc's HEAP_MAX_SIZE on 64-bit: a thread arena's heap is a 64 MB reservation, 64 MB aligned. */
const ARENA_HEAP = 64 * MB;
/** V8 reserves a WebAssembly memory with its guard regions (about 10 GB on 64-bit): nothing else here maps as much. */
const WASM_RESERVATION = 4 * 1024 * MB;

/**
 * Reads it now; `collect`: after a full garbage collection of this thread's V8 heap first (other
 * threads' heaps are their own), to tell garbage from what is live.
 */
export function memoryBreakdown(options: { collect?: boolean } = {}): MemoryBreakdown {
  if (options.collect) collectGarbage();
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const m = process.memoryUsage();
  const heap = nativeHeapStats();
  const resident = { brkHeapMb: 0, arenaHeapsMb: 0, arenaHeaps: 0, wasmMb: 0, wasmMemories: 0, otherAnonMb: 0, filesMb: 0 };
  // An arena heap is mapped read-write where used and PROT_NONE beyond: the two parts are
  // adjacent mappings inside one 64 MB-aligned reservation.
  const mappings: Array<{ start: number; end: number; perms: string; name: string; rssKb: number }> = [];
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      mappings.push({ start: parseInt(head[1]!, 16), end: parseInt(head[2]!, 16), perms: head[3]!, name: head[4]!, rssKb: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && mappings.length > 0) mappings.at(-1)!.rssKb = Number(rss[1]);
  }
  const arenaStarts = new Set<number>();
  for (const [i, map] of mappings.entries()) {
    const mb = map.rssKb / 1024;
    if (map.name === '[heap]') resident.brkHeapMb += mb;
    else if (map.name.startsWith('/')) resident.filesMb += mb;
    else if (map.name === '' || map.name.startsWith('[anon')) {
      const base = map.start - (map.start % ARENA_HEAP);
      const next = mappings[i + 1];
      const reservationEnd = map.end === base + ARENA_HEAP || (next && next.start === map.end && next.end === base + ARENA_HEAP);
      if (map.start === base && reservationEnd && map.end - map.start <= ARENA_HEAP) {
        resident.arenaHeapsMb += mb;
        arenaStarts.add(base);
      } else if (arenaStarts.has(base) && map.end <= base + ARENA_HEAP) resident.arenaHeapsMb += mb;
      else if (next && next.start === map.end && next.perms.startsWith('---') && next.end - next.start >= WASM_RESERVATION) {
        // A WebAssembly memory: its pages in use, then the rest of its reservation, inaccessible.
        resident.wasmMb += mb;
        resident.wasmMemories++;
      } else resident.otherAnonMb += mb;
    }
  }
  resident.arenaHeaps = arenaStarts.size;
  return {
    rssMb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024,
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? NaN),
    v8: { heapUsedMb: m.heapUsed / MB, heapTotalMb: m.heapTotal / MB, externalMb: m.external / MB, arrayBuffersMb: m.arrayBuffers / MB },
    malloc: heap && { arenaMb: heap.arenaBytes / MB, inUseMb: heap.inUseBytes / MB, freeMb: heap.freeBytes / MB, mmappedMb: heap.mmappedBytes / MB },
    resident,
  };
}
