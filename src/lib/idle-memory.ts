// What a process gives back once its burst of work is over. V8 keeps the main thread's heap at the
// size the busiest moment needed until something makes it collect, and an idle server allocates
// too little for that: after 24 embedded calls, 60 s later, its heap still held ~200 MB against
// ~100 at idle, and the RSS stayed 50-120 MB above idle in 7 of 12 runs (BENCHMARKS.md, "How many
// decoders"). One full collection, then glibc's trim of what it freed, brings it back.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimNativeHeap } from './native-heap.ts';

let gc: (() => void) | undefined;

/**
 * A full garbage collection of the calling thread's heap, now (a pause of a few to tens of ms:
 * never while a call's audio is paced on this thread). V8 offers no call for it without
 * --expose-gc, so the flag is set at run time and a fresh context's `gc` taken (what the flag
 * exposes to contexts made after it is set).
 */
export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}

/** A full collection, then the native heap's free pages back to the system. */
export async function releaseIdleMemory(): Promise<void> {
  collectGarbage();
  await trimNativeHeap();
}
