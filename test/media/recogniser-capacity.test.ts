// Issue 25: a call the server's embedded recogniser cannot hold (POCKETSPHINX_MAX_STREAMS streams
// open) is refused at create-web-call with the account concurrency limit's answer (429,
// `concurrency_limit_reached`), before anything is created; once a call ends its room is free
// again. Before, the call was created and then cut off when its stream was refused at the join.
//
// The create/join race: calls created while the recogniser had room may join when it has none.
// Created calls hold nothing (a burst of unjoined creates starves nobody); a join holds a place
// only from its admission until its stream is open (src/media/session-registry.ts). Two calls
// joining at once for the last place: one starts, the other is refused `recogniser_busy` (close
// 4503) with its token unused, and joins with the same token once the first has ended. Before,
// both started and one ended `error_asr`. Twilio's voice webhook answers <Reject reason="busy"/>
// while the recogniser is full (a local server speaking Twilio's wire protocol).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { JoinError, WebCallClient } from '../../src/client/web-call-client.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { type MediaServer, eventually, startMediaServer } from './helpers.ts';
import { FakeTwilio } from './twilio/fake-twilio.ts';

const flow = {
  start_node_id: 'talk',
  nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [] }],
};
const PUBLIC = 'https://switchboard.example.com';
const TWILIO_NUMBER = '+14155550200';
const BUSY = '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="busy"/></Response>';

for (const kind of STORES) {
  describe(`create-web-call when the embedded recogniser is full (${kind.name})`, { skip: kind.skip || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
    let s: MediaServer;
    let twilio: FakeTwilio;
    before(async () => {
      twilio = await new FakeTwilio().start();
      s = await startMediaServer(kind.name, { env: { POCKETSPHINX_MAX_STREAMS: '1', POCKETSPHINX_WARM_DECODERS: '0', PUBLIC_BASE_URL: PUBLIC, TWILIO_API_BASE_URL: twilio.baseUrl } });
      twilio.route = (url) => url.replace(PUBLIC, s.baseUrl);
    });
    after(async () => {
      await s?.close();
      await twilio?.close();
    });

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

    it('two calls joining for the last place: one starts, the other is refused recogniser_busy with its token unused; Twilio hears busy', { timeout: 60_000 }, async () => {
      const agentId = await s.flowAgent(flow, { denoising_mode: 'no-denoise' });
      await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as Array<{ call_status: string }>).every((c) => c.call_status !== 'ongoing'), 10_000);
      const a = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      const b = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(a.status, 201, 'created calls hold no room');
      assert.equal(b.status, 201, 'created calls hold no room');
      const joins = await Promise.allSettled([a, b].map((c) => WebCallClient.join({ url: s.baseUrl, accessToken: c.json.access_token })));
      const started = joins.flatMap((j) => (j.status === 'fulfilled' ? [j.value] : []));
      const refused = joins.flatMap((j, i) => (j.status === 'rejected' ? [{ error: j.reason as JoinError, call: [a, b][i]! }] : []));
      assert.equal(started.length, 1, 'one call starts');
      assert.equal(refused.length, 1, 'the other is refused, not started and cut off (error_asr)');
      const { error, call } = refused[0]!;
      assert.ok(error instanceof JoinError);
      assert.equal(error.code, 'recogniser_busy');
      assert.equal(error.closeCode, 4503);
      assert.equal((await s.api('GET', `/v2/get-call/${call.json.call_id}`)).json.call_status, 'registered', 'the refused token was not redeemed');

      const imported = await s.api('POST', '/import-phone-number', { phone_number: TWILIO_NUMBER, inbound_agent_id: agentId, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
      const rung = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: TWILIO_NUMBER });
      assert.equal(rung.twiml, BUSY, 'a phone caller hears busy while the recogniser is full');
      assert.equal(rung.stream, undefined);

      await started[0]!.hangup();
      await started[0]!.ended;
      const joined = await eventually(async () => WebCallClient.join({ url: s.baseUrl, accessToken: call.json.access_token }).catch(() => undefined), 5_000, 100);
      await joined.waitFor('agent_start_talking', 10_000);
      await joined.hangup();
      await joined.ended;
    });
  });
}
