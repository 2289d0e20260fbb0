import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { WebhookService } from '../../src/services/webhook.service.ts';
import { WebhookOutbox } from '../../src/services/webhook-outbox.ts';
import { WebhookRepository } from '../../src/storage/webhook.repository.ts';
import { KEY_FILE_NAME, SecretBox } from '../../src/lib/secret-box.ts';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`webhook subscriptions on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let key: string;
    let otherKey: string;
    before(async () => {
      h = await startHarness(kind.name);
      ({ apiKey: key } = await h.account());
      ({ apiKey: otherKey } = await h.account());
    });
    after(() => h.close());

    const set = (body: unknown, k = key) => h.request({ method: 'POST', url: '/api/v1/webhooks/set.php', key: k, body });
    const list = (k = key) => h.request({ method: 'GET', url: '/api/v1/webhooks/list.php', key: k });
    const del = (body: unknown, k = key) => h.request({ method: 'POST', url: '/api/v1/webhooks/delete.php', key: k, body });

    it('creates with 201 and the secret once; list never shows it', async () => {
      const created = await set({ url: 'https://example.com/a', events: ['lead.created'] });
      assert.equal(created.status, 201, created.raw);
      assert.match(created.json.id, /^wh_[0-9a-f]{32}$/);
      assert.equal(created.json.url, 'https://example.com/a');
      assert.deepEqual(created.json.events, ['lead.created']);
      assert.match(created.json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(typeof created.json.created_at, 'number');
      assert.equal(created.json.status, 'active');

      const listed = await list();
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.json.available_events, ['lead.created', 'lead.updated', 'ticket.created', 'call.finished', 'test_run.finished']);
      const mine = listed.json.webhooks.find((w: any) => w.id === created.json.id);
      assert.ok(mine);
      assert.equal(mine.secret, undefined);
      assert.ok(!listed.raw.includes(created.json.secret), 'the secret appears nowhere in list.php');
      for (const field of ['id', 'url', 'events', 'created_at', 'updated_at', 'status']) assert.ok(field in mine, field);
    });

    it('updates by url (200, no secret) and by id, and keeps one webhook per url', async () => {
      const created = await set({ url: 'https://example.com/b', events: ['*'] });
      assert.equal(created.status, 201);
      const byUrl = await set({ url: 'https://example.com/b', events: ['ticket.created', 'lead.updated'] });
      assert.equal(byUrl.status, 200);
      assert.equal(byUrl.json.id, created.json.id);
      assert.equal(byUrl.json.secret, undefined);
      assert.deepEqual(byUrl.json.events, ['ticket.created', 'lead.updated']);
      const byId = await set({ id: created.json.id, url: 'https://example.com/b2', events: ['*'] });
      assert.equal(byId.status, 200);
      assert.equal(byId.json.url, 'https://example.com/b2');
      assert.equal(byId.json.secret, undefined);
      const clash = await set({ id: created.json.id, url: 'https://example.com/a', events: ['*'] });
      assert.equal(clash.status, 409);
      assert.equal(clash.json.code, 'webhook_url_taken');
      const missing = await set({ id: 'wh_00000000000000000000000000000000', url: 'https://example.com/x', events: ['*'] });
      assert.equal(missing.status, 422);
    });

    it('refuses unknown kinds naming them, "*" with others, empty lists and non-http urls', async () => {
      const unknown = await set({ url: 'https://example.com/c', events: ['lead.created', 'lead.deleted'] });
      assert.equal(unknown.status, 400);
      assert.match(unknown.json.message, /lead\.deleted/);
      assert.equal((await set({ url: 'https://example.com/c', events: ['*', 'lead.created'] })).status, 400);
      assert.equal((await set({ url: 'https://example.com/c', events: [] })).status, 400);
      for (const url of ['ftp://example.com/x', '/relative', 'example.com/x', 'http://exa mple.com', 'javascript:alert(1)']) {
        const res = await set({ url, events: ['*'] });
        assert.equal(res.status, 400, url);
        assert.equal(res.json.status, 'error');
      }
    });

    it('deletes by id or url with {deleted, id}; 422 when not under the key', async () => {
      const a = await set({ url: 'https://example.com/d1', events: ['*'] });
      const b = await set({ url: 'https://example.com/d2', events: ['*'] });
      const byId = await del({ id: a.json.id });
      assert.equal(byId.status, 200);
      assert.deepEqual(byId.json, { deleted: true, id: a.json.id });
      const byUrl = await del({ url: 'https://example.com/d2' });
      assert.deepEqual(byUrl.json, { deleted: true, id: b.json.id });
      assert.equal((await del({ id: a.json.id })).status, 422);
      assert.equal((await del({})).status, 400);
      assert.equal((await del({ id: a.json.id, url: 'https://example.com/d1' })).status, 400);
    });

    it('keeps accounts apart: another key can neither see, update nor delete', async () => {
      const mine = await set({ url: 'https://example.com/iso', events: ['*'] });
      const theirs = await list(otherKey);
      assert.ok(!theirs.json.webhooks.some((w: any) => w.id === mine.json.id));
      assert.equal((await set({ id: mine.json.id, url: 'https://example.com/iso', events: ['*'] }, otherKey)).status, 422);
      assert.equal((await del({ id: mine.json.id }, otherKey)).status, 422);
      // The same url under another account is that account's own webhook.
      const same = await set({ url: 'https://example.com/iso', events: ['*'] }, otherKey);
      assert.equal(same.status, 201);
      assert.notEqual(same.json.id, mine.json.id);
    });

    it('answers 401 without a key on every route', async () => {
      for (const [method, url] of [
        ['GET', '/api/v1/webhooks/list.php'],
        ['POST', '/api/v1/webhooks/set.php'],
        ['POST', '/api/v1/webhooks/delete.php'],
        ['GET', '/api/v1/webhooks/deliveries.php'],
        ['POST', '/api/v1/webhooks/redeliver.php'],
        ['GET', '/api/v1/webhooks/agent-secret.php'],
        ['POST', '/api/v1/webhooks/agent-secret.php'],
        ['POST', '/api/v1/leads/create.php'],
        ['POST', '/api/v1/leads/update.php'],
        ['GET', '/api/v1/leads/get.php?id=1'],
        ['GET', '/api/v1/leads/list.php'],
        ['POST', '/api/v1/tickets/create.php'],
        ['GET', '/api/v1/tickets/list.php'],
      ] as const) {
        const res = await h.request({ method, url, body: method === 'POST' ? {} : undefined });
        assert.equal(res.status, 401, `${method} ${url}`);
        const bad = await h.request({ method, url, key: 'sb_wrong', body: method === 'POST' ? {} : undefined });
        assert.equal(bad.status, 401, `${method} ${url} with a wrong key`);
      }
    });

    it('stores the secret encrypted, not in plaintext', async () => {
      const created = await set({ url: 'https://example.com/enc', events: ['*'] });
      const row = await h.runtime.store.db.selectFrom('webhooks').selectAll().where('id', '=', created.json.id).executeTakeFirstOrThrow();
      assert.ok(!row.secret_encrypted.includes(created.json.secret.slice(6)));
      assert.match(row.secret_encrypted, /^v1\.[0-9a-f]{8}\./);
    });

    it('re-encrypts stored secrets under a new server key, after which the old key can go', async () => {
      const { accountId } = await h.account();
      const created = await h.runtime.services.webhooks.setWebhook(accountId, { url: 'https://example.com/rotate', events: ['*'] });
      const agent = await h.runtime.services.webhooks.agentSecret(accountId);
      // The harness's server key (the generated key file on SQLite, WEBHOOK_SECRET_KEYS on
      // PostgreSQL): rotate to a new key, keeping it second.
      const configured = h.runtime.config.webhooks.secretKeys;
      const oldKey = Buffer.from(configured.length > 0 ? configured[0]! : fs.readFileSync(path.join(h.testStore.dataDir, KEY_FILE_NAME), 'utf8').trim(), 'base64');
      const newKey = randomBytes(32);
      const repo = new WebhookRepository(h.runtime.store.db, h.runtime.store.dialect);
      const serviceWith = (keys: Buffer[]) => new WebhookService({ store: h.runtime.store, webhooks: repo, box: new SecretBox(keys), clock: h.clock, destinations: new DestinationPolicy(), outbox: new WebhookOutbox({ webhooks: repo, clock: h.clock }) });
      const rotating = serviceWith([newKey, oldKey]);
      assert.ok((await rotating.reencryptSecrets()) >= 2);
      assert.equal(await rotating.reencryptSecrets(), 0, 'idempotent');
      const onlyNew = new SecretBox([newKey]);
      for (const row of await repo.allEncryptedSecrets()) assert.doesNotThrow(() => onlyNew.decrypt(row.value));
      assert.equal((await serviceWith([newKey]).agentSecret(accountId)).secret, agent.secret);
      const row = await repo.findWebhook(accountId, created.webhook.id);
      assert.equal(onlyNew.decrypt(row!.secret_encrypted), created.webhook.secret);
    });
  });
}
