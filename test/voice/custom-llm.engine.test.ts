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
  HOLD_ON_TEXT,
  RECONNECT_BUDGET_MS,
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

  it(`auto_reconnect: ${PING_TIMEOUT_MS} ms without a frame counts as lost; it dials again at 0.5, 1.5, 3.5 and 7.5 s (backoff), then gives up within ${RECONNECT_BUDGET_MS} ms`, async () => {
    const scheduler = new ManualScheduler();
    const { state, open: memoryOpen } = memoryOpener();
    const dialledAt: number[] = [];
    const open: typeof memoryOpen = (url, handlers) => (dialledAt.push(scheduler.now()), memoryOpen(url, handlers));
    const failures: Array<[LlmWebsocketReason, string]> = [];
    // random 0.5 is a jitter factor of exactly 1.
    const engine = new CustomLlmEngine({ url: 'ws://x/llm/', callId: 'call_2', open, callDetails: () => ({}), onFailure: (r, d) => void failures.push([r, d]), scheduler, random: () => 0.5 });
    const begun = collect(engine.begin(new AbortController().signal));
    await tick();
    state.handlers!.onMessage(JSON.stringify({ response_type: 'config', config: { auto_reconnect: true } }));
    state.handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hi.', content_complete: true }));
    assert.deepEqual(await begun, [{ type: 'text', text: 'Hi.' }]);
    scheduler.advance(PING_INTERVAL_MS);
    assert.equal(JSON.parse(state.sent.at(-1)!).interaction_type, 'ping_pong');
    // The server answers pings for a while: the connection stays.
    state.handlers!.onMessage(JSON.stringify({ response_type: 'ping_pong', timestamp: 1 }));
    const lastHeardAt = scheduler.now();
    scheduler.advance(PING_INTERVAL_MS);
    assert.equal(state.opens, 1);
    // Then silence: the connection is dropped and dialled again, which fails every time.
    state.fail = true;
    let lostAt = -1;
    for (let ms = 0; ms <= PING_TIMEOUT_MS + PING_INTERVAL_MS + RECONNECT_BUDGET_MS; ms += 100) {
      scheduler.advance(100);
      if (state.closed === 1 && lostAt < 0) lostAt = scheduler.now();
      for (let i = 0; i < 3; i++) await tick();
    }
    assert.equal(state.closed, 1);
    assert.ok(lostAt - lastHeardAt > PING_TIMEOUT_MS && lostAt - lastHeardAt <= PING_TIMEOUT_MS + PING_INTERVAL_MS, 'lost at the first ping check past the silence limit');
    // Dialled again 0.5 s after the loss, then after 1, 2 and 4 s; the next wait would pass the budget.
    assert.deepEqual(dialledAt.slice(1).map((t) => t - lostAt), [500, 1_500, 3_500, 7_500], 'not at once: 0.5 s, then doubling, within the budget');
    assert.equal(failures.length, 1);
    assert.equal(failures[0]![0], 'error_llm_websocket_lost_connection');
    assert.match(failures[0]![1], /connection refused/);
    engine.close();
  });

  it('auto_reconnect: a turn asked while the server is down gets the hold-on message, then the answer of the new connection; nothing is lost', async () => {
    const scheduler = new ManualScheduler();
    const { state, open } = memoryOpener();
    const engine = new CustomLlmEngine({ url: 'ws://x/llm', callId: 'call_3', open, callDetails: () => ({}), onFailure: (r) => assert.fail(`failed: ${r}`), scheduler, random: () => 0 });
    const begun = collect(engine.begin(new AbortController().signal));
    await tick();
    state.handlers!.onMessage(JSON.stringify({ response_type: 'config', config: { auto_reconnect: true } }));
    state.handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hi.', content_complete: true }));
    await begun;
    // The server goes away (a redeploy): refused for a while.
    state.fail = true;
    state.handlers!.onClose('lost', 'socket closed (1006)');
    const answer = collect(engine.respond('what time is it', new AbortController().signal));
    for (let i = 0; i < 3; i++) await tick();
    scheduler.advance(400); // the first attempt (0.4 s with no jitter) is refused
    for (let i = 0; i < 3; i++) await tick();
    assert.equal(state.opens, 2);
    state.fail = false;
    scheduler.advance(800); // the second attempt connects
    for (let i = 0; i < 3; i++) await tick();
    assert.equal(state.opens, 3);
    const resent = state.sent.map((t) => JSON.parse(t)).filter((e) => e.interaction_type === 'response_required');
    assert.deepEqual(resent.map((e) => [e.response_id, e.transcript.at(-1).content]), [[1, 'what time is it']], 'the turn asked while no socket was open goes to the new one');
    state.handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: 1, content: 'Noon.', content_complete: true }));
    assert.deepEqual(await answer, [{ type: 'text', text: `${HOLD_ON_TEXT} ` }, { type: 'text', text: 'Noon.' }]);
    engine.close();
  });
});
