// CustomLlmEngine's timers on a manual scheduler, over an in-memory socket: the begin wait, and
// auto_reconnect's silence detection and reconnection attempts. (The protocol end to end, through
// real calls and real sockets, is test/media/custom-llm.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import {
  BEGIN_WAIT_MS,
  CustomLlmEngine,
  PING_INTERVAL_MS,
  PING_TIMEOUT_MS,
  RECONNECT_ATTEMPTS,
  type LlmSocketHandlers,
  type LlmWebsocketReason,
} from '../../src/voice/engines/custom-llm.engine.ts';
import type { EngineOutput } from '../../src/voice/engines/types.ts';

/** An opener whose sockets the test drives: `opens` counts dials, `fail` makes the next ones reject. */
function memoryOpener() {
  const state = { opens: 0, fail: false, sent: [] as string[], handlers: undefined as LlmSocketHandlers | undefined, closed: 0 };
  const open = async (_url: string, handlers: LlmSocketHandlers) => {
    state.opens += 1;
    if (state.fail) throw new Error('connection refused');
    state.handlers = handlers;
    return { send: (text: string) => void state.sent.push(text), close: () => void (state.closed += 1) };
  };
  return { state, open };
}

async function collect(outputs: AsyncIterable<EngineOutput>): Promise<EngineOutput[]> {
  const out: EngineOutput[] = [];
  for await (const o of outputs) out.push(o);
  return out;
}

const tick = () => new Promise((r) => setImmediate(r));

describe('CustomLlmEngine timers', () => {
  it(`without a begin message within ${BEGIN_WAIT_MS} ms, begin says nothing (the user speaks first)`, async () => {
    const scheduler = new ManualScheduler();
    const { open } = memoryOpener();
    const engine = new CustomLlmEngine({ url: 'ws://x/llm', callId: 'call_1', open, callDetails: () => ({}), onFailure: () => assert.fail('no failure'), scheduler });
    let done = false;
    const begun = collect(engine.begin(new AbortController().signal)).then((o) => ((done = true), o));
    await tick();
    scheduler.advance(BEGIN_WAIT_MS - 1);
    await tick();
    assert.equal(done, false);
    scheduler.advance(1);
    assert.deepEqual(await begun, []);
    engine.close();
  });

  it(`auto_reconnect: ${PING_TIMEOUT_MS} ms without a frame counts as lost; after ${RECONNECT_ATTEMPTS} failed dials the call ends error_llm_websocket_lost_connection`, async () => {
    const scheduler = new ManualScheduler();
    const { state, open } = memoryOpener();
    const failures: Array<[LlmWebsocketReason, string]> = [];
    const engine = new CustomLlmEngine({ url: 'ws://x/llm/', callId: 'call_2', open, callDetails: () => ({}), onFailure: (r, d) => void failures.push([r, d]), scheduler });
    const begun = collect(engine.begin(new AbortController().signal));
    await tick();
    state.handlers!.onMessage(JSON.stringify({ response_type: 'config', config: { auto_reconnect: true } }));
    state.handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hi.', content_complete: true }));
    assert.deepEqual(await begun, [{ type: 'text', text: 'Hi.' }]);
    scheduler.advance(PING_INTERVAL_MS);
    assert.equal(JSON.parse(state.sent.at(-1)!).interaction_type, 'ping_pong');
    // The server answers pings for a while: the connection stays.
    state.handlers!.onMessage(JSON.stringify({ response_type: 'ping_pong', timestamp: 1 }));
    scheduler.advance(PING_INTERVAL_MS);
    assert.equal(state.opens, 1);
    // Then silence: the connection is dropped and dialled again, which fails every time.
    state.fail = true;
    scheduler.advance(PING_TIMEOUT_MS);
    for (let i = 0; i < 10; i++) await tick();
    assert.equal(state.closed, 1);
    assert.equal(state.opens, 1 + RECONNECT_ATTEMPTS);
    assert.equal(failures.length, 1);
    assert.equal(failures[0]![0], 'error_llm_websocket_lost_connection');
    assert.match(failures[0]![1], /connection refused/);
    engine.close();
  });
});
