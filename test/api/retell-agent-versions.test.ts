/**
 * Retell's version operations through the real `retell-sdk` against a listening server, on both
 * stores (issue 26, item 8): `agent.createVersion` (a copy of a base version, settings and pinned
 * engine), `agent.publish` (a mark with a title and description on an immutable version) and
 * `agent.listVersions` (a page), with `version_description` as an agent field.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import Retell from 'retell-sdk';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

type Json = Record<string, any>;
const json = (value: unknown) => value as Json;

for (const kind of STORES) {
  describe(`retell-sdk agent versions on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let retell: Retell;
    let accountId: string;
    let apiKey: string;

    before(async () => {
      h = await startHarness(kind.name);
      ({ accountId, apiKey } = await h.account());
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      retell = new Retell({ apiKey, baseURL: `http://127.0.0.1:${(h.app.server.address() as net.AddressInfo).port}`, maxRetries: 0 });
    });
    after(() => h?.close());

    it('createVersion copies a base version, settings and pinned engine, as the next version', async () => {
      const { agentId, flowId } = await createFlowAgent(h, apiKey, { agent_name: 'Spring', version_description: 'First cut' });
      h.clock.advance(1000);
      await retell.conversationFlow.update(flowId, { global_prompt: 'Changed after version 1.' });
      await retell.agent.update(agentId, { agent_name: 'Summer', version_description: 'Summer hours' });
      h.clock.advance(1000);
      const copy = json(await retell.agent.createVersion(agentId, { base_version: 1 }));
      assert.deepEqual([copy.version, copy.agent_name, copy.version_description], [3, 'Spring', 'First cut']);
      assert.equal(json(await retell.agent.retrieve(agentId)).version, 3, 'the copy is the latest version');
      const agents = h.runtime.services.agents;
      const engine = async (version: number) => {
        const resolved = await agents.resolveVersion(accountId, agentId, version);
        return resolved.engine.type === 'conversation_flow' ? resolved.engine.definition.global_prompt : undefined;
      };
      assert.equal(await engine(3), await engine(1), 'the engine definition version 1 pinned, not the flow as it is now');
      assert.equal(await engine(2), 'Changed after version 1.');

      await assert.rejects(retell.agent.createVersion(agentId, { base_version: 9 }), (e: unknown) => e instanceof Retell.UnprocessableEntityError && /no version 9/.test(e.message));
      await assert.rejects(retell.agent.createVersion('agent_nobody', { base_version: 1 }), (e: unknown) => e instanceof Retell.UnprocessableEntityError);
      await assert.rejects(retell.agent.createVersion(agentId, { base_version: 0 }), (e: unknown) => e instanceof Retell.BadRequestError && /base_version/.test(e.message));
    });

    it('publish marks a version with a title and description; listVersions pages them', async () => {
      const { agentId } = await createFlowAgent(h, apiKey);
      await retell.agent.update(agentId, { agent_name: 'Two', version_description: 'Second' });
      await retell.agent.update(agentId, { agent_name: 'Three' });
      h.clock.advance(500);
      assert.equal(await retell.agent.publish(agentId, { version: 2, version_title: 'Launch', version_description: 'Holiday hours' }), null, '204');

      const page = await retell.agent.listVersions(agentId);
      assert.equal(page.has_more, false);
      const summary = page.items.map((v) => [v.version, v.is_published, v.version_title ?? null, v.version_description ?? null]);
      assert.deepEqual(summary, [
        [3, false, null, null],
        [2, true, 'Launch', 'Holiday hours'],
        [1, false, null, null],
      ], 'newest first; the description given at publication replaces the one the version was made with');

      const first = await retell.agent.listVersions(agentId, { limit: 2, sort_order: 'ascending' });
      assert.deepEqual([first.items.map((v) => v.version), first.has_more, first.pagination_key], [[1, 2], true, '2']);
      const rest = await retell.agent.listVersions(agentId, { limit: 2, sort_order: 'ascending', pagination_key: first.pagination_key! });
      assert.deepEqual([rest.items.map((v) => v.version), rest.has_more], [[3], false]);

      await retell.agent.publish(agentId, { version: 2 });
      assert.deepEqual(
        (await retell.agent.listVersions(agentId)).items.filter((v) => v.version === 2).map((v) => [v.is_published, v.version_title]),
        [[true, 'Launch']],
        'publishing again keeps what was noted',
      );
      assert.equal(json(await retell.agent.retrieve(agentId, { version: 2 })).agent_name, 'Two', 'publishing changes no setting');

      await assert.rejects(retell.agent.publish(agentId, { version: 7 }), (e: unknown) => e instanceof Retell.UnprocessableEntityError && /no version 7/.test(e.message));
      await assert.rejects(retell.agent.publish(agentId, { version: 1, version_title: 'x'.repeat(300) }), (e: unknown) => e instanceof Retell.BadRequestError && /version_title/.test(e.message));
      await assert.rejects(retell.agent.listVersions('agent_nobody'), (e: unknown) => e instanceof Retell.UnprocessableEntityError);

      assert.equal(await retell.agent.delete(agentId), null, 'an agent with published versions is deleted with them');
      await assert.rejects(retell.agent.listVersions(agentId), (e: unknown) => e instanceof Retell.UnprocessableEntityError);
    });
  });
}
