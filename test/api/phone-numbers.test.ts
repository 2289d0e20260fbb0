import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

const SID = `AC${'a1'.repeat(16)}`;
const TOKEN = 'f0'.repeat(16);

for (const kind of STORES) {
  describe(`phone numbers on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let otherKey: string;
    let agentId: string;
    let otherAgentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ apiKey: otherKey } = await h.account());
      ({ agentId } = await createFlowAgent(h, key));
      ({ agentId: otherAgentId } = await createFlowAgent(h, otherKey));
    });
    after(() => h.close());
    const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, as = key) => h.request({ method, url, key: as, body });
    const count = async () => (await req('GET', '/list-phone-numbers')).json.length as number;

    it('imports, reads, lists, updates and deletes a SIP trunk number, in Retell’s shape', async () => {
      const created = await req('POST', '/import-phone-number', {
        phone_number: '+14155550100',
        nickname: 'front desk',
        inbound_agent_id: agentId,
        outbound_agent_id: agentId,
        outbound_agent_version: 1,
        termination_uri: 'trunk.example.com:5070;transport=tcp',
        sip_trunk_auth_username: 'trunkuser',
        sip_trunk_auth_password: 'hunter2-secret',
      });
      assert.equal(created.status, 201, created.raw);
      assert.equal(created.json.phone_number, '+14155550100');
      assert.equal(created.json.phone_number_pretty, '+1 (415) 555-0100');
      assert.equal(created.json.phone_number_type, 'custom');
      assert.equal(created.json.inbound_agent_id, agentId);
      assert.equal(created.json.inbound_agent_version, null);
      assert.equal(created.json.outbound_agent_version, 1);
      assert.equal(created.json.sip_trunk_auth_password_set, true);
      assert.equal(created.json.twilio_credentials_set, false);
      assert.ok(!created.raw.includes('hunter2-secret'), 'the password is never returned');

      // The path takes the number with %2B or without its +.
      for (const path of ['%2B14155550100', '14155550100']) {
        const got = await req('GET', `/get-phone-number/${path}`);
        assert.equal(got.status, 200, path);
        assert.equal(got.json.nickname, 'front desk');
        assert.ok(!got.raw.includes('hunter2-secret'));
      }
      assert.deepEqual((await req('GET', '/list-phone-numbers')).json.map((n: any) => n.phone_number), ['+14155550100']);

      h.clock.advance(1000);
      const updated = await req('PATCH', '/update-phone-number/%2B14155550100', { nickname: null, inbound_agent_version: 1 });
      assert.equal(updated.status, 200, updated.raw);
      assert.equal(updated.json.nickname, null);
      assert.equal(updated.json.inbound_agent_version, 1);
      assert.equal(updated.json.termination_uri, 'trunk.example.com:5070;transport=tcp', 'unchanged fields stay');
      assert.ok(updated.json.last_modification_timestamp > created.json.last_modification_timestamp);

      assert.equal((await req('DELETE', '/delete-phone-number/%2B14155550100')).status, 204);
      assert.equal((await req('GET', '/get-phone-number/%2B14155550100')).status, 422);
      assert.equal((await req('DELETE', '/delete-phone-number/%2B14155550100')).status, 422);
    });

    it('stores the trunk password and Twilio credentials encrypted, and gives them back only to the transports', async () => {
      const t = await req('POST', '/import-phone-number', { phone_number: '+442071838750', twilio_account_sid: SID, twilio_auth_token: TOKEN, inbound_agent_id: agentId });
      assert.equal(t.status, 201, t.raw);
      const s = await req('POST', '/import-phone-number', {
        phone_number: '+4930901820',
        termination_uri: 'sip:trunk.example.net',
        sip_trunk_auth_username: 'u',
        sip_trunk_auth_password: 'p4ssword-xyz',
      });
      assert.equal(s.status, 201, s.raw);
      const rows = await sql<Record<string, unknown>>`select * from phone_numbers`.execute(h.runtime.store.db);
      const stored = JSON.stringify(rows.rows);
      for (const secret of [SID, TOKEN, 'p4ssword-xyz']) assert.ok(!stored.includes(secret), `${secret} is not stored in the clear`);

      const twilio = await h.runtime.services.phoneNumbers.findForInbound('442071838750');
      assert.ok(twilio);
      assert.deepEqual(h.runtime.services.phoneNumbers.reachOf(twilio), { kind: 'twilio', accountSid: SID, authToken: TOKEN });
      const sip = await h.runtime.services.phoneNumbers.findForInbound('+4930901820');
      assert.ok(sip);
      assert.deepEqual(h.runtime.services.phoneNumbers.reachOf(sip), {
        kind: 'sip',
        target: { host: 'trunk.example.net', port: null, transport: 'udp' },
        auth: { username: 'u', password: 'p4ssword-xyz' },
      });
      const listed = await req('GET', '/list-phone-numbers');
      assert.equal(listed.json.find((n: any) => n.phone_number === '+442071838750').phone_number_type, 'twilio');
      assert.ok(!listed.raw.includes(SID) && !listed.raw.includes(TOKEN));
    });

    it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
      const before = await count();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ phone_number: '4155550100' }, 'phone_number'],
        [{ phone_number: '+0155550100' }, 'phone_number'],
        [{ phone_number: '+1415555010012345' }, 'phone_number'],
        [{ phone_number: '+14155550111', inbound_agent_id: 'agent_nope' }, 'inbound_agent_id'],
        [{ phone_number: '+14155550111', outbound_agent_id: otherAgentId }, 'outbound_agent_id'],
        [{ phone_number: '+14155550111', inbound_agent_id: agentId, inbound_agent_version: 9 }, 'inbound_agent_version'],
        [{ phone_number: '+14155550111', inbound_agent_version: 1 }, 'inbound_agent_version'],
        [{ phone_number: '+14155550111', termination_uri: '127.0.0.1:5060' }, 'termination_uri'],
        [{ phone_number: '+14155550111', termination_uri: 'sip:localhost' }, 'termination_uri'],
        [{ phone_number: '+14155550111', termination_uri: 'sip:bob@trunk.example.com' }, 'termination_uri'],
        [{ phone_number: '+14155550111', termination_uri: 'trunk.example.com;lr' }, 'termination_uri'],
        [{ phone_number: '+14155550111', termination_uri: 'trunk.example.com:99999' }, 'termination_uri'],
        [{ phone_number: '+14155550111', inbound_webhook_url: 'http://10.0.0.8/inbound' }, 'inbound_webhook_url'],
        [{ phone_number: '+14155550111', inbound_webhook_url: 'ftp://example.com/x' }, 'inbound_webhook_url'],
        [{ phone_number: '+14155550111', twilio_account_sid: 'AC123', twilio_auth_token: TOKEN }, 'twilio_account_sid'],
        [{ phone_number: '+14155550111', twilio_account_sid: SID, twilio_auth_token: 'nothex' }, 'twilio_auth_token'],
        [{ phone_number: '+14155550111', twilio_account_sid: SID }, 'twilio_auth_token'],
        [{ phone_number: '+14155550111', twilio_account_sid: SID, twilio_auth_token: TOKEN, termination_uri: 'trunk.example.com' }, 'twilio_account_sid'],
        [{ phone_number: '+14155550111', sip_trunk_auth_password: 'x' }, 'sip_trunk_auth_username'],
        [{ phone_number: '+14155550111', sip_trunk_auth_username: 'x' }, 'sip_trunk_auth_password'],
        [{ phone_number: '+14155550111', nickname: 7 }, 'nickname'],
        [{ phone_number: '+14155550111', surprise: true }, 'surprise'],
      ];
      for (const [body, field] of cases) {
        const res = await req('POST', '/import-phone-number', body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
        assert.match(res.json.message, new RegExp(field), `${JSON.stringify(body)}: ${res.json.message}`);
      }
      assert.equal(await count(), before, 'nothing written');

      const ok = await req('POST', '/import-phone-number', { phone_number: '+14155550112', termination_uri: 'trunk.example.com' });
      assert.equal(ok.status, 201);
      const updates: Array<[Record<string, unknown>, string]> = [
        [{ twilio_account_sid: SID, twilio_auth_token: TOKEN }, 'twilio_account_sid'],
        [{ outbound_agent_id: 'agent_ghost' }, 'outbound_agent_id'],
        [{ termination_uri: 'sips:trunk.example.com' }, 'termination_uri'],
      ];
      for (const [body, field] of updates) {
        const res = await req('PATCH', '/update-phone-number/%2B14155550112', body);
        assert.equal(res.status, 400, res.raw);
        assert.match(res.json.message, new RegExp(field));
      }
      const after = await req('GET', '/get-phone-number/%2B14155550112');
      assert.equal(after.json.termination_uri, 'trunk.example.com');
      assert.equal(after.json.twilio_credentials_set, false);
      assert.equal(after.json.outbound_agent_id, null);
      // Switching sides in one update: the other side set to null.
      const switched = await req('PATCH', '/update-phone-number/%2B14155550112', { termination_uri: null, twilio_account_sid: SID, twilio_auth_token: TOKEN });
      assert.equal(switched.status, 200, switched.raw);
      assert.equal(switched.json.phone_number_type, 'twilio');
    });

    it('keeps numbers to their account, and one number to one account', async () => {
      const mine = await req('POST', '/import-phone-number', { phone_number: '+14155550120', inbound_agent_id: agentId });
      assert.equal(mine.status, 201);
      assert.equal((await req('GET', '/get-phone-number/%2B14155550120', undefined, otherKey)).status, 422);
      assert.equal((await req('PATCH', '/update-phone-number/%2B14155550120', { nickname: 'x' }, otherKey)).status, 422);
      assert.equal((await req('DELETE', '/delete-phone-number/%2B14155550120', undefined, otherKey)).status, 422);
      assert.ok(!(await req('GET', '/list-phone-numbers', undefined, otherKey)).json.some((n: any) => n.phone_number === '+14155550120'));
      const again = await req('POST', '/import-phone-number', { phone_number: '+14155550120' }, otherKey);
      assert.equal(again.status, 409);
      assert.equal(again.json.code, 'phone_number_taken');
      assert.equal((await req('GET', '/get-phone-number/%2B14155550120')).json.inbound_agent_id, agentId, 'the holder keeps it');
    });
  });
}
