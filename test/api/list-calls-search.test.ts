/**
 * list-calls' dashboard filters on both stores: `filter_criteria.query` (call id, transcript text
 * or a metadata value, any case, wildcards taken literally), `disconnection_reason` and
 * `call_successful`, alone and with the other filters and pagination.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`list-calls search and outcome filters on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    const ids: Record<string, string> = {};

    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      const { agentId } = await createFlowAgent(h, key);
      const calls = h.runtime.services.lifecycle;
      const make = async (name: string, metadata: Record<string, unknown> | undefined) => {
        h.clock.advance(10);
        const res = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId, ...(metadata ? { metadata } : {}) } });
        assert.equal(res.status, 201);
        ids[name] = res.json.call_id;
        return res.json as { call_id: string; access_token: string };
      };
      // booked: a successful appointment; refund: unsuccessful, a 100% wildcard in the text; plain: registered only.
      const booked = await make('booked', { customer: 'ACME-42', tier: 'gold' });
      await calls.joinCall(booked.access_token);
      await calls.finishCall(booked.call_id, {
        reason: 'agent_hangup',
        transcript: 'Agent: Hello.\nUser: I would like to BOOK an Appointment.',
        callAnalysis: { call_summary: 'Booked.', call_successful: true, user_sentiment: 'Positive' },
      });
      const refund = await make('refund', { customer: 'Globex' });
      await calls.joinCall(refund.access_token);
      await calls.finishCall(refund.call_id, {
        reason: 'user_hangup',
        transcript: 'User: I want a 100% refund_now.',
        callAnalysis: { call_summary: 'Angry.', call_successful: false, user_sentiment: 'Negative' },
      });
      await make('plain', undefined);
    });
    after(() => h.close());

    const list = async (filter: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
      const res = await h.request({ method: 'POST', url: '/v2/list-calls', key, body: { filter_criteria: filter, sort_order: 'ascending', ...extra } });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return (res.json as { call_id: string }[]).map((c) => c.call_id);
    };

    it('finds calls by transcript text in any case, by a metadata value, and by call id', async () => {
      assert.deepEqual(await list({ query: 'appointment' }), [ids.booked]);
      assert.deepEqual(await list({ query: 'book AN appoint' }), [ids.booked]);
      assert.deepEqual(await list({ query: 'acme-42' }), [ids.booked]);
      assert.deepEqual(await list({ query: 'globex' }), [ids.refund]);
      assert.deepEqual(await list({ query: ids.plain!.slice(5, 20) }), [ids.plain]);
      assert.deepEqual(await list({ query: 'nothing like this' }), []);
    });

    it('reads metadata values, never keys', async () => {
      assert.deepEqual(await list({ query: 'customer' }), []);
      assert.deepEqual(await list({ query: 'gold' }), [ids.booked]);
    });

    it('takes % and _ literally', async () => {
      assert.deepEqual(await list({ query: '100%' }), [ids.refund]);
      assert.deepEqual(await list({ query: 'refund_now' }), [ids.refund]);
      assert.deepEqual(await list({ query: '%' }), [ids.refund]);
      assert.deepEqual(await list({ query: '_' }), [ids.booked, ids.refund, ids.plain], 'every call id has an underscore');
      assert.deepEqual(await list({ query: 'refund-now' }), []);
    });

    it('filters by disconnection reason and by call_successful', async () => {
      assert.deepEqual(await list({ disconnection_reason: ['agent_hangup'] }), [ids.booked]);
      assert.deepEqual(await list({ disconnection_reason: ['agent_hangup', 'user_hangup'] }), [ids.booked, ids.refund]);
      assert.deepEqual(await list({ call_successful: [true] }), [ids.booked]);
      assert.deepEqual(await list({ call_successful: [false] }), [ids.refund]);
      assert.deepEqual(await list({ call_successful: [true, false] }), [ids.booked, ids.refund], 'calls without an analysis never match');
    });

    it('combines with the other filters and pagination', async () => {
      assert.deepEqual(await list({ query: 'a', call_status: ['ended'] }), [ids.booked, ids.refund]);
      assert.deepEqual(await list({ query: 'a', call_status: ['ended'] }, { limit: 1 }), [ids.booked]);
      assert.deepEqual(await list({ query: 'a', call_status: ['ended'] }, { limit: 1, pagination_key: ids.booked }), [ids.refund]);
      assert.deepEqual(await list({ query: 'refund', call_successful: [true] }), []);
    });

    it('refuses an empty or oversized query and unknown reasons with 400', async () => {
      for (const filter of [{ query: '' }, { query: 'x'.repeat(257) }, { disconnection_reason: ['bored'] }, { call_successful: ['yes'] }]) {
        const res = await h.request({ method: 'POST', url: '/v2/list-calls', key, body: { filter_criteria: filter } });
        assert.equal(res.status, 400, JSON.stringify(filter));
      }
    });
  });
}
