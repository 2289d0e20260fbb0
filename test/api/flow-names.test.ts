// Issue 27: a conversation flow's optional `name` (ours: Retell's flows have none) is kept as set
// through create, update, get and list on every store, is absent until set, and a bad one is a
// 400 naming `name` that changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

const graph = { start_node_id: 'hello', nodes: [{ id: 'hello', type: 'end', instruction: { type: 'static_text', text: 'Hello.' } }] };

for (const kind of STORES) {
  describe(`flow names on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
    });
    after(async () => h?.close());

    const get = async (id: string) => (await h.request({ method: 'GET', url: `/get-conversation-flow/${id}`, key })).json;

    it('keeps the name as set through create, get, list and update', async () => {
      const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: { name: 'Front desk – bookings', ...graph } });
      assert.equal(created.status, 201, created.raw);
      const id = created.json.conversation_flow_id as string;
      assert.equal(created.json.name, 'Front desk – bookings');
      assert.equal((await get(id)).name, 'Front desk – bookings');

      const renamed = await h.request({ method: 'PATCH', url: `/update-conversation-flow/${id}`, key, body: { name: 'Bookings' } });
      assert.equal(renamed.status, 200, renamed.raw);
      assert.equal(renamed.json.name, 'Bookings');
      assert.deepEqual(renamed.json.nodes, graph.nodes, 'renaming leaves the graph alone');
      const listed = (await h.request({ method: 'GET', url: '/list-conversation-flows', key })).json as Array<{ conversation_flow_id: string; name?: string }>;
      assert.equal(listed.find((f) => f.conversation_flow_id === id)?.name, 'Bookings');

      // An update that does not mention the name keeps it.
      await h.request({ method: 'PATCH', url: `/update-conversation-flow/${id}`, key, body: { global_prompt: 'Be brief.' } });
      assert.equal((await get(id)).name, 'Bookings');
    });

    it('answers no name for a flow never named', async () => {
      const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: graph });
      assert.equal(created.status, 201, created.raw);
      assert.equal('name' in created.json, false);
      assert.equal('name' in (await get(created.json.conversation_flow_id)), false);
    });

    it('refuses an empty, overlong or non-string name with a 400 naming name, and changes nothing', async () => {
      for (const name of ['', 'x'.repeat(257), 42, null]) {
        const refused = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: { ...graph, name } });
        assert.equal(refused.status, 400, `create with ${JSON.stringify(name)}`);
        assert.match(refused.json.message, /\bname\b/);
      }
      const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: { ...graph, name: 'Kept' } });
      const id = created.json.conversation_flow_id as string;
      const refused = await h.request({ method: 'PATCH', url: `/update-conversation-flow/${id}`, key, body: { name: 'y'.repeat(257) } });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /\bname\b/);
      assert.equal((await get(id)).name, 'Kept');
      assert.equal((await get(id)).last_modification_timestamp, created.json.last_modification_timestamp);
    });
  });
}
