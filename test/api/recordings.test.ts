// Recordings through the API on both stores: the signed, expiring recording_url (plays without an
// API key, Range included; expiry on the injected clock; tampering refused), the API-key route,
// delete-call, and on PostgreSQL the same recording served by another server process.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { STORES } from '../helpers/stores.ts';

const RATE = 16_000;
const TTL_MS = 60_000;

for (const kind of STORES) {
  describe(`recordings through the API on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name, { RECORDING_URL_TTL_MS: String(TTL_MS) });
      ({ apiKey: key } = await h.account());
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(() => h.close());

    /** A finished call with a 3 s recording: the user's track a ramp, the agent's a constant. */
    async function recordedCall(): Promise<{ callId: string }> {
      const { json: created } = await h.request({ method: 'POST', url: '/v2/create-web-call', key, body: { agent_id: agentId } });
      const callId = created.call_id as string;
      const writer = h.runtime.services.recordings.open(callId);
      const user = Buffer.alloc(RATE * 3 * 2);
      for (let i = 0; i < RATE * 3; i++) user.writeInt16LE((i % 2000) - 1000, i * 2);
      await writer.writeChunk(0, 0, user);
      await writer.writeChunk(1, 0, Buffer.alloc(RATE * 2, 7));
      const recordingPath = await writer.finish(RATE * 3, RATE);
      assert.ok(await h.runtime.services.lifecycle.finishCall(callId, { reason: 'user_hangup', recordingPath }));
      return { callId };
    }

    /** A plain GET of a URL's path and query, without an API key, as an <audio> element makes it. */
    const play = (url: string, headers: Record<string, string> = {}) => {
      const u = new URL(url);
      return h.app.inject({ method: 'GET', url: `${u.pathname}${u.search}`, headers });
    };

    it('recording_url is a signed link made afresh on every read; it plays without a key, Range included', async () => {
      const { callId } = await recordedCall();
      const got = await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key });
      const url = got.json.recording_url as string;
      assert.match(url, new RegExp(`^${h.config.publicBaseUrl}/v2/recording/${callId}\\?expires=(\\d+)&signature=[\\w-]{43}$`));
      assert.equal(new URL(url).searchParams.get('expires'), String(h.clock.now() + TTL_MS), 'expires RECORDING_URL_TTL_MS after the read');

      const whole = await play(url);
      assert.equal(whole.statusCode, 200);
      assert.equal(whole.headers['content-type'], 'audio/wav');
      assert.equal(whole.headers['accept-ranges'], 'bytes');
      assert.equal(whole.rawPayload.length, 44 + RATE * 3 * 4);
      const keyed = await h.app.inject({ method: 'GET', url: `/v2/get-call-recording/${callId}`, headers: { authorization: `Bearer ${key}` } });
      assert.deepEqual(whole.rawPayload, keyed.rawPayload, 'the same bytes as the API-key route');
      assert.equal(whole.rawPayload.readInt16LE(44 + 4 * 5), -995, 'user left');
      assert.equal(whole.rawPayload.readInt16LE(44 + 4 * 5 + 2), 0x0707, 'agent right');

      const ranged = await play(url, { range: 'bytes=100-199' });
      assert.equal(ranged.statusCode, 206);
      assert.equal(ranged.headers['content-range'], `bytes 100-199/${whole.rawPayload.length}`);
      assert.deepEqual(ranged.rawPayload, whole.rawPayload.subarray(100, 200));
      const suffix = await play(url, { range: 'bytes=-10' });
      assert.deepEqual(suffix.rawPayload, whole.rawPayload.subarray(-10));
      const beyond = await play(url, { range: `bytes=${whole.rawPayload.length}-` });
      assert.equal(beyond.statusCode, 416);
      assert.equal(beyond.headers['content-range'], `bytes */${whole.rawPayload.length}`);
      assert.equal(beyond.json().code, 'range_not_satisfiable');

      h.clock.advance(1_000);
      const again = (await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key })).json.recording_url as string;
      assert.notEqual(again, url, 'a later read makes a new link');
      const listed = await h.request({ method: 'POST', url: '/v2/list-calls', key, body: { filter_criteria: { agent_id: [agentId] } } });
      const inList = listed.json.find((c: { call_id: string }) => c.call_id === callId).recording_url as string;
      assert.match(inList, /\/v2\/recording\/.+signature=/);
      const updated = await h.request({ method: 'PATCH', url: `/v2/update-call/${callId}`, key, body: { metadata: { seen: true } } });
      assert.match(updated.json.recording_url, /\/v2\/recording\/.+signature=/);
      assert.equal((await play(inList)).statusCode, 200);
    });

    it('a link stops playing when it expires, and a tampered link never plays', async () => {
      const { callId } = await recordedCall();
      const url = (await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key })).json.recording_url as string;
      const u = new URL(url);
      const expires = u.searchParams.get('expires')!;
      const signature = u.searchParams.get('signature')!;
      const invalid = async (pathAndQuery: string) => {
        const res = await h.app.inject({ method: 'GET', url: pathAndQuery });
        assert.equal(res.statusCode, 401, pathAndQuery);
        assert.equal(res.json().code, 'recording_link_invalid', pathAndQuery);
      };
      const { callId: other } = await recordedCall();
      await invalid(`/v2/recording/${other}?expires=${expires}&signature=${signature}`);
      await invalid(`/v2/recording/${callId}?expires=${Number(expires) + 1}&signature=${signature}`);
      await invalid(`/v2/recording/${callId}?expires=${expires}&signature=${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`);
      await invalid(`/v2/recording/${callId}?expires=${expires}`);
      await invalid(`/v2/recording/${callId}`);

      h.clock.advance(TTL_MS - 1);
      assert.equal((await play(url)).statusCode, 200, 'still plays 1 ms before it expires');
      h.clock.advance(1);
      const expired = await play(url);
      assert.equal(expired.statusCode, 401);
      assert.equal(expired.json().code, 'recording_link_expired');
      assert.match(expired.json().message, /read the call again/);
      const fresh = (await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key })).json.recording_url as string;
      assert.equal((await play(fresh)).statusCode, 200, 'reading the call again gives a link that plays');
    });

    it('delete-call deletes the stored recording: neither route serves it, the store holds nothing', async () => {
      const { callId } = await recordedCall();
      const url = (await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key })).json.recording_url as string;
      assert.equal((await h.request({ method: 'DELETE', url: `/v2/delete-call/${callId}`, key })).status, 204);
      assert.equal(await h.runtime.services.recordings.size(callId, `recordings/${callId}.wav`), null);
      assert.equal(await h.runtime.services.recordings.recover(callId), null, 'no tracks left either');
      const gone = await play(url);
      assert.equal(gone.statusCode, 422);
      assert.equal(gone.json().code, 'recording_not_found');
      if (kind.name === 'sqlite') assert.ok(!fs.existsSync(path.join(h.testStore.dataDir, 'recordings', `${callId}.wav`)));
    });

    it('tightening a finished call to basic_attributes_only deletes the stored recording', async () => {
      const { callId } = await recordedCall();
      const res = await h.request({ method: 'PATCH', url: `/v2/update-call/${callId}`, key, body: { data_storage_setting: 'basic_attributes_only' } });
      assert.equal(res.status, 200);
      assert.equal(res.json.recording_url, null);
      assert.equal(await h.runtime.services.recordings.size(callId, `recordings/${callId}.wav`), null);
    });

    if (kind.name === 'postgres') {
      describe('served by another server process on the same PostgreSQL', () => {
        let other: ServerProcess | undefined;
        let dataDir: string;
        before(async () => {
          dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-rec-other-'));
          other = await startServer({ DATABASE_URL: h.testStore.databaseUrl!, DATA_DIR: dataDir });
        });
        after(async () => {
          await other?.stop();
          fs.rmSync(dataDir, { recursive: true, force: true });
        });

        it('the other server streams the recording (API key and signed link), with Range', async () => {
          const { callId } = await recordedCall();
          const local = await h.app.inject({ method: 'GET', url: `/v2/get-call-recording/${callId}`, headers: { authorization: `Bearer ${key}` } });
          const keyed = await fetch(`${other!.baseUrl}/v2/get-call-recording/${callId}`, { headers: { authorization: `Bearer ${key}` } });
          assert.equal(keyed.status, 200);
          assert.deepEqual(Buffer.from(await keyed.arrayBuffer()), local.rawPayload);

          // A link made by this server plays on the other: they share the signing key.
          const got = await fetch(`${other!.baseUrl}/v2/get-call/${callId}`, { headers: { authorization: `Bearer ${key}` } });
          const url = new URL(((await got.json()) as { recording_url: string }).recording_url);
          const mine = new URL((await h.request({ method: 'GET', url: `/v2/get-call/${callId}`, key })).json.recording_url);
          for (const link of [url, mine]) {
            const ranged = await fetch(`${other!.baseUrl}${link.pathname}${link.search}`, { headers: { range: 'bytes=44-1043' } });
            assert.equal(ranged.status, 206, link.href);
            assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), local.rawPayload.subarray(44, 1044));
          }
        });
      });
    }
  });
}
