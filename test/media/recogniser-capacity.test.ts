// Issue 25: a call the server's embedded recogniser cannot hold (POCKETSPHINX_MAX_STREAMS streams
// open) is refused at create-web-call with the account concurrency limit's answer (429,
// `concurrency_limit_reached`), before anything is created; once a call ends its room is free
// again. Before, the call was created and then cut off when its stream was refused at the join.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { type MediaServer, eventually, startMediaServer } from './helpers.ts';

const flow = {
  start_node_id: 'talk',
  nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [] }],
};

for (const kind of STORES) {
  describe(`create-web-call when the embedded recogniser is full (${kind.name})`, { skip: kind.skip || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
    let s: MediaServer;
    before(async () => {
      s = await startMediaServer(kind.name, { env: { POCKETSPHINX_MAX_STREAMS: '1', POCKETSPHINX_WARM_DECODERS: '0' } });
    });
    after(() => s.close());

    it('answers 429 concurrency_limit_reached and creates nothing; a call that ends frees its room', { timeout: 60_000 }, async () => {
      const agentId = await s.flowAgent(flow, { denoising_mode: 'no-denoise' });
      const first = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(first.status, 201, JSON.stringify(first.json));
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: first.json.access_token });
      await client.waitFor('agent_start_talking', 10_000); // its recogniser stream is open

      const refused = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(refused.status, 429, JSON.stringify(refused.json));
      assert.equal(refused.json.code, 'concurrency_limit_reached');
      assert.match(refused.json.message, /embedded speech recogniser/);
      const listed = await s.api('POST', '/v2/list-calls', {});
      assert.deepEqual(listed.json.map((c: { call_id: string }) => c.call_id), [first.json.call_id], 'the refused request created no call');

      await client.hangup();
      await client.ended;
      const again = await eventually(async () => {
        const r = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
        return r.status === 201 ? r : undefined;
      }, 5_000, 100);
      assert.equal(again.status, 201);
    });
  });
}
