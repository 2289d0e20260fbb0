// Text produced during a call (a transcript, a flow's lead and ticket fields) may hold U+0000 or a
// lone surrogate (an LLM or a backend said so); it is stored with U+FFFD in their place on both
// stores, instead of failing the write (PostgreSQL text cannot hold NUL) and losing the record.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { storableText } from '../../src/domain/text.ts';
import { flowToolsFor } from '../../src/media/media-runtime.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

describe('storableText', () => {
  it('replaces NUL and lone surrogates with U+FFFD and keeps everything else', () => {
    assert.equal(storableText('a\u0000b'), 'a\uFFFDb');
    assert.equal(storableText('x\ud800y'), 'x\uFFFDy');
    assert.equal(storableText('ok 😀 é'), 'ok 😀 é');
  });
});

for (const kind of STORES) {
  describe(`text written during a call on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let accountId: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key, accountId } = await h.account());
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(() => h.close());

    it('a transcript with NUL and a lone surrogate is stored, with U+FFFD in their place', async () => {
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      await h.runtime.services.lifecycle.joinCall(created.json.access_token);
      const finished = await h.runtime.services.lifecycle.finishCall(created.json.call_id, { reason: 'agent_hangup', transcript: 'Agent: hi\u0000 there\ud800' });
      assert.equal(finished, true);
      const call = await h.request({ method: 'GET', url: `/v2/get-call/${created.json.call_id}`, key });
      assert.equal(call.json.transcript, 'Agent: hi\uFFFD there\uFFFD');
      assert.equal(call.json.call_status, 'ended');
    });

    it("a flow's lead and ticket fields with NUL are stored, with U+FFFD in their place", async () => {
      const created = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const tools = flowToolsFor(h.runtime.services.leads, h.runtime.services.tickets)({ accountId, callId: created.json.call_id });
      await tools.createLead({ name: 'Ann\u0000 Lee', phone: '555 1234', notes: 'n\u0000' });
      await tools.createTicket({ subject: 'Broken\u0000', description: 'It \u0000 broke' });
      const leads = await h.request({ method: 'GET', url: '/api/v1/leads/list.php', key });
      const lead = leads.json.leads.find((l: { name: string }) => l.name.startsWith('Ann'));
      assert.equal(lead.name, 'Ann\uFFFD Lee');
      assert.equal(lead.notes, 'n\uFFFD');
      const tickets = await h.request({ method: 'GET', url: '/api/v1/tickets/list.php', key });
      assert.equal(tickets.json.tickets[0].subject, 'Broken\uFFFD');
      assert.equal(tickets.json.tickets[0].description, 'It \uFFFD broke');
    });
  });
}
