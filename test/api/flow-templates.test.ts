// The flow builder's templates (web/dashboard/flow-templates.ts) are flows the server takes as they
// are, and a flow's `display_position`s come back exactly as sent (the builder round-trips).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FLOW_TEMPLATES } from '../../web/dashboard/flow-templates.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`the flow builder's templates on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account()).apiKey;
    });
    after(async () => h?.close());

    it('creates each template as it is, and reads it back unchanged, positions included', async () => {
      for (const template of FLOW_TEMPLATES.filter((t) => t.key !== 'empty')) {
        const flow = template.flow();
        const created = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: flow });
        assert.equal(created.status, 201, `${template.key}: ${created.raw}`);
        const read = await h.request({ method: 'GET', url: `/get-conversation-flow/${created.json.conversation_flow_id}`, key });
        assert.deepEqual(read.json.nodes, flow.nodes, template.key);
        assert.ok(flow.nodes!.every((n) => n.display_position), `${template.key}: every node placed`);
      }
    });

    it('refuses the empty canvas (a flow needs a node) and a position out of bounds, naming the field', async () => {
      const empty = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: FLOW_TEMPLATES.find((t) => t.key === 'empty')!.flow() });
      assert.equal(empty.status, 400);
      const far = { start_node_id: 'a', nodes: [{ id: 'a', type: 'end', display_position: { x: 1e9, y: 0 } }] };
      const refused = await h.request({ method: 'POST', url: '/create-conversation-flow', key, body: far });
      assert.equal(refused.status, 400);
      assert.match(refused.json.message, /display_position/);
    });
  });
}
