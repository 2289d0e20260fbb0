import type { Scheduler } from '../lib/scheduler.ts';
import { overrideEngine } from './engine-override.ts';
import type { EngineOutput, ResponseEngine } from './engines/types.ts';

/**
 * The agent's `begin_message_delay_ms` (Retell's field, 0 to 5000): the engine's opening waits
 * that long on the call's scheduler before it starts, so the caller has a moment before the agent
 * speaks. Only the opening is delayed (Retell: only when the agent speaks first); an abort (the
 * caller hung up, the call ended) ends the wait at once. Every other method is the engine's own.
 */
export function withBeginDelay(engine: ResponseEngine, delayMs: number, scheduler: Scheduler): ResponseEngine {
  if (delayMs <= 0) return engine;
  const begin = async function* (signal: AbortSignal): AsyncIterable<EngineOutput> {
    await wait(delayMs, scheduler, signal);
    if (signal.aborted) return;
    yield* engine.begin(signal);
  };
  return overrideEngine(engine, { begin });
}

function wait(ms: number, scheduler: Scheduler, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      scheduler.clear(handle);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const handle = scheduler.setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
