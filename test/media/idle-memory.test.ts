// Once the process holds no call, the memory its calls left is given back: a full collection of
// the main thread's heap (then glibc's trim), IDLE_RELEASE_MS after the last call ended, never
// while a call runs (its pause would delay the call's audio). V8 reports a collection asked for
// by code as "forced", which is what is watched here.
import assert from 'node:assert/strict';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { IDLE_RELEASE_MS } from '../../src/media/session-registry.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, rawJoin, startMediaServer } from './helpers.ts';

// One store: what is tested is the process's memory after its calls.
for (const kind of STORES.slice(0, 1)) {
  describe(`memory given back once no call is held (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const forced: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const detail = (entry as PerformanceEntry & { detail?: { kind: number; flags: number } }).detail;
        if (detail && detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR && (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0) forced.push(performance.now());
      }
    });
    before(async () => {
      s = await startMediaServer(kind.name, { providers: fakeProviders([]) });
      observer.observe({ entryTypes: ['gc'] });
    });
    after(async () => {
      observer.disconnect();
      await s.close();
    });

    it('collects the main thread once the last call has ended, not while it runs', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent({
        start_node_id: 'n',
        start_speaker: 'agent',
        nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hi there.' } }],
      });
      const created = (await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).json as { call_id: string; access_token: string };
      const client = await rawJoin(s.baseUrl, created.access_token);
      await eventually(() => client.events.some((e) => e.type === 'call_started'), 5_000);
      // The call runs longer than the idle delay: nothing is collected meanwhile.
      await new Promise((r) => setTimeout(r, IDLE_RELEASE_MS + 1_000));
      assert.deepEqual(forced, [], 'no forced collection while a call runs');
      client.ws.send(JSON.stringify({ type: 'hangup' }));
      await client.closed;
      await eventually(async () => ((await s.api('GET', `/v2/get-call/${created.call_id}`)).json as { call_status: string }).call_status === 'ended', 5_000);
      const ended = performance.now();
      await eventually(() => forced.length > 0, IDLE_RELEASE_MS + 3_000);
      assert.equal(forced.length, 1, 'one collection');
      assert.ok(forced[0]! - ended >= IDLE_RELEASE_MS - 500, `collected ${Math.round(forced[0]! - ended)} ms after the call ended`);
    });
  });
}
