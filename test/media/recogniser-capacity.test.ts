// Issue 25: a call the server's embedded recogniser cannot hold (POCKETSPHINX_MAX_STREAMS streams
// open) is refused at create-web-call with the account concurrency limit's answer (429,
// `concurrency_limit_reached`), before anything is created; once a call ends its room is free
// again. Before, the call was created and then cut off when its stream was refused at the join.
// A created call holds its room until it joins (src/providers/reserved-stt.ts): the next create
// is refused before the first has joined, and deleting the first gives its room back.
//
// The phone paths, with the one stream held by a web call created and not yet joined: an inbound
// SIP call gets 486 Busy Here (baresip, Debian, as the phone), an inbound Twilio call
// <Reject reason="busy"/> from the voice webhook (a local server speaking Twilio's wire
// protocol), an outbound create-phone-call 429; no call row is made for any of them. Once the
// holder is deleted, a placed call holds the room while it rings and gives it back once it rang out,
// and a Twilio call gets its stream. One server for all, to keep the suite short.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { STORES } from '../helpers/stores.ts';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import type { SipTransport } from '../../src/media/sip/sip.transport.ts';
import { type MediaServer, eventually, startMediaServer } from './helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './sip/baresip.ts';
import { FakeTwilio } from './twilio/fake-twilio.ts';

const flow = {
  start_node_id: 'talk',
  nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [] }],
};
const PUBLIC = 'https://switchboard.example.com';
const SIP_NUMBER = '+14155550100';
const TWILIO_NUMBER = '+14155550200';
const BUSY = '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="busy"/></Response>';

for (const kind of STORES) {
  describe(`create-web-call when the embedded recogniser is full (${kind.name})`, { skip: kind.skip || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
    let s: MediaServer;
    let twilio: FakeTwilio;
    let sip: SipTransport;
    const calls = async () => (await s.api('POST', '/v2/list-calls', {})).json as Array<{ call_id: string; call_status: string }>;
    before(async () => {
      twilio = await new FakeTwilio().start();
      s = await startMediaServer(kind.name, {
        env: {
          POCKETSPHINX_MAX_STREAMS: '1',
          POCKETSPHINX_WARM_DECODERS: '0',
          SIP_PORT: '0',
          SIP_RTP_PORT_MIN: '46000',
          SIP_RTP_PORT_MAX: '46998',
          PUBLIC_BASE_URL: PUBLIC,
          TWILIO_API_BASE_URL: twilio.baseUrl,
        },
      });
      const local = s.baseUrl;
      twilio.route = (url) => url.replace(PUBLIC, local).replace(PUBLIC.replace('https', 'wss'), local.replace('http', 'ws'));
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
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

    it('a created call holds its room until it joins: the next is refused before the join, delete gives the room back, the join is never refused', { timeout: 60_000 }, async () => {
      const agentId = await s.flowAgent(flow, { denoising_mode: 'no-denoise' });
      for (const c of (await s.api('POST', '/v2/list-calls', {})).json as Array<{ call_id: string; call_status: string }>) {
        if (c.call_status === 'registered') assert.equal((await s.api('DELETE', `/v2/delete-call/${c.call_id}`)).status, 204);
      }
      const first = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(first.status, 201, JSON.stringify(first.json));
      // Nothing is open yet, but the room is first's until it joins.
      const raced = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(raced.status, 429, JSON.stringify(raced.json));
      assert.equal(raced.json.code, 'concurrency_limit_reached');

      assert.equal((await s.api('DELETE', `/v2/delete-call/${first.json.call_id}`)).status, 204);
      const second = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(second.status, 201, JSON.stringify(second.json));
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: second.json.access_token });
      await client.waitFor('agent_start_talking', 10_000); // joined: its stream opened in the room held for it
      assert.equal((await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).status, 429);
      await client.hangup();
      await client.ended;
      const ended = await eventually(async () => {
        const r = await s.api('GET', `/v2/get-call/${second.json.call_id}`);
        return r.json.call_status === 'ended' ? r : undefined;
      }, 5_000, 100);
      assert.equal(ended.json.disconnection_reason, 'user_hangup');
    });

    it('phone calls: Twilio <Reject reason="busy"/>, create-phone-call 429, SIP 486 Busy Here, nothing created; with room again a Twilio call gets its stream', { timeout: 60_000 }, async (t) => {
      const agentId = await s.flowAgent(flow, { denoising_mode: 'no-denoise' });
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: SIP_NUMBER, inbound_agent_id: agentId })).status, 201);
      const imported = await s.api('POST', '/import-phone-number', { phone_number: TWILIO_NUMBER, inbound_agent_id: agentId, outbound_agent_id: agentId, twilio_account_sid: twilio.accountSid, twilio_auth_token: twilio.authToken });
      assert.equal(imported.status, 201, JSON.stringify(imported.json));
      for (const c of await calls()) if (c.call_status === 'registered') assert.equal((await s.api('DELETE', `/v2/delete-call/${c.call_id}`)).status, 204);
      await eventually(async () => (await calls()).every((c) => c.call_status !== 'ongoing'), 10_000);
      const known = (await calls()).map((c) => c.call_id);
      // The one stream is held by a web call that has not joined yet (nothing is open).
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const holder = created.json.call_id as string;
      const onlyHolder = async () => assert.deepEqual((await calls()).map((c) => c.call_id).filter((id) => !known.includes(id)), [holder], 'no call was created');

      const rung = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: TWILIO_NUMBER });
      assert.equal(rung.status, 200);
      assert.equal(rung.twiml, BUSY);
      assert.equal(rung.stream, undefined);
      await onlyHolder();

      const dialled = twilio.calls.size;
      const placed = await s.api('POST', '/v2/create-phone-call', { from_number: TWILIO_NUMBER, to_number: '+14155550777' });
      assert.equal(placed.status, 429, JSON.stringify(placed.json));
      assert.equal(placed.json.code, 'concurrency_limit_reached');
      assert.match(placed.json.message, /embedded speech recogniser/);
      assert.equal(twilio.calls.size, dialled, 'nothing was dialled');
      await onlyHolder();

      if (!hasBaresip()) t.diagnostic(`SIP part skipped: ${NO_BARESIP}`);
      else {
        const phone = await Baresip.start();
        try {
          phone.command('dial', `sip:${SIP_NUMBER}@127.0.0.1:${sip.port}`);
          const closed = await phone.waitFor((e) => e.type === 'CALL_CLOSED', 10_000);
          assert.match(String(closed.param), /486/);
        } finally {
          await phone.close();
        }
        await onlyHolder();
      }

      assert.equal((await s.api('DELETE', `/v2/delete-call/${holder}`)).status, 204);
      // A placed call holds the room while it rings; rung out unanswered, it gives it back.
      const ringing = await s.api('POST', '/v2/create-phone-call', { from_number: TWILIO_NUMBER, to_number: '+14155550777' });
      assert.equal(ringing.status, 201, JSON.stringify(ringing.json));
      assert.equal((await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).status, 429, 'the ringing call holds the room');
      assert.equal(await twilio.fail(ringing.json.telephony_identifier, 'no-answer'), 204);
      assert.equal((await s.api('GET', `/v2/get-call/${ringing.json.call_id}`)).json.disconnection_reason, 'dial_no_answer');
      const after = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      assert.equal(after.status, 201, 'its room was given back');
      assert.equal((await s.api('DELETE', `/v2/delete-call/${after.json.call_id}`)).status, 204);

      const again = await twilio.ring(`${PUBLIC}/twilio/voice`, { from: '+14155550123', to: TWILIO_NUMBER });
      assert.match(again.twiml, /<Connect><Stream/);
      assert.ok(await eventually(async () => (await calls()).find((c) => c.call_status === 'ongoing'), 10_000));
      again.stream?.stop();
      await eventually(async () => (await calls()).every((c) => c.call_status !== 'registered' && c.call_status !== 'ongoing'), 10_000);
    });
  });
}
