/**
 * Webhook destinations (issue 10, finding 5): every form of a refused destination the attack run
 * tried, refused when a URL is set (set.php, an agent's webhook_url, a call's agent_override) and
 * when a delivery connects; URLs with credentials refused with the reason.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebhookService } from '../../src/services/webhook.service.ts';
import { WebhookOutbox } from '../../src/services/webhook-outbox.ts';
import { WebhookRepository } from '../../src/storage/webhook.repository.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { WebhookHttpClient } from '../../src/webhooks/http-client.ts';
import { type Harness, createFlowAgent, startHarness } from '../helpers/harness.ts';
import { STORES } from '../helpers/stores.ts';
import { createLead, deliveries, drainDeliveries } from './helpers.ts';
import { Receiver } from './receiver.ts';

/** Each refused form, as a URL to the test receiver's port where it names this machine. */
const REFUSED: Array<[string, (port: number) => string]> = [
  ['IPv4-compatible IPv6 (the form that passed)', (p) => `http://[::127.0.0.1]:${p}/x`],
  ['IPv4-compatible IPv6, hex', (p) => `http://[::7f00:1]:${p}/x`],
  ['IPv4-compatible cloud metadata', () => 'http://[::169.254.169.254]/latest/meta-data/'],
  ['IPv4-compatible public address (the whole deprecated ::/96)', () => 'http://[::8.8.8.8]/'],
  ['loopback', (p) => `http://127.0.0.1:${p}/x`],
  ['loopback, https', (p) => `https://127.0.0.1:${p}/x`],
  ['loopback, two-part', (p) => `http://127.1:${p}/x`],
  ['loopback, decimal', (p) => `http://2130706433:${p}/x`],
  ['loopback, octal', (p) => `http://0177.0.0.1:${p}/x`],
  ['loopback, hex octets', (p) => `http://0x7f.0x0.0x0.0x1:${p}/x`],
  ['loopback, hex', (p) => `http://0x7f000001:${p}/x`],
  ['IPv4-mapped loopback', (p) => `http://[::ffff:127.0.0.1]:${p}/x`],
  ['IPv4-mapped loopback, hex', (p) => `http://[::ffff:7f00:1]:${p}/x`],
  ['IPv4-mapped cloud metadata', () => 'http://[::ffff:169.254.169.254]/latest/meta-data/'],
  ['IPv4-translated (::ffff:0:0/96)', (p) => `http://[::ffff:0:127.0.0.1]:${p}/x`],
  ['NAT64 (64:ff9b::/96)', (p) => `http://[64:ff9b::127.0.0.1]:${p}/x`],
  ['NAT64 local use (64:ff9b:1::/48)', () => 'http://[64:ff9b:1::a9fe:a9fe]/'],
  ['6to4 (2002::/16)', (p) => `http://[2002:7f00:1::]:${p}/x`],
  ['Teredo (2001::/32)', () => 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/'],
  ['0.0.0.0', (p) => `http://0.0.0.0:${p}/x`],
  ['0', (p) => `http://0:${p}/x`],
  ['[::]', (p) => `http://[::]:${p}/x`],
  ['[::1]', (p) => `http://[::1]:${p}/x`],
  ['cloud metadata', () => 'http://169.254.169.254/latest/meta-data/'],
  ['cloud metadata, decimal', () => 'http://2852039166/latest/meta-data/'],
  ['10.x', () => 'http://10.0.0.1/'],
  ['172.16.x', () => 'http://172.16.5.4/'],
  ['192.168.x', () => 'http://192.168.1.1/'],
  ['CGNAT (100.64/10)', () => 'http://100.64.0.1/'],
  ['CGNAT cloud metadata', () => 'http://100.100.100.200/latest/meta-data/'],
  ['ULA (fc00::/7)', () => 'http://[fc00::1]/'],
  ['ULA cloud metadata', () => 'http://[fd00:ec2::254]/latest/meta-data/'],
  ['IPv6 link-local (fe80::/10)', () => 'http://[fe80::1]/'],
  ['multicast', () => 'http://224.0.0.1/'],
  ['IPv6 multicast', () => 'http://[ff02::1]/'],
  ['broadcast', () => 'http://255.255.255.255/'],
  ['reserved (240/4)', () => 'http://240.0.0.1/'],
  ['localhost', (p) => `http://localhost:${p}/x`],
  ['LOCALHOST with a trailing dot', (p) => `http://LOCALHOST.:${p}/x`],
  ['a name under .localhost', (p) => `http://api.localhost:${p}/x`],
];

/** URLs with credentials: refused whatever the host. */
const WITH_CREDENTIALS = ['https://user:pass@example.com/hook', 'https://user@example.com/hook', 'https://:secret@example.com/hook', 'http://a:b@127.0.0.1/x'];

/** Destinations that stay allowed. */
const ALLOWED = ['https://example.com/hook', 'http://93.184.216.34/x', 'http://[2606:4700:4700::1111]/x', 'https://[::ffff:8.8.8.8]/x', 'https://localhost.example.com/x'];

describe('destination policy: the address forms the resolver and URLs write', () => {
  it('refuses the IPv4-compatible range ::/96 in every spelling, and judges mapped addresses as IPv4', () => {
    const policy = new DestinationPolicy();
    // The system resolver writes IPv4-compatible addresses with a dotted tail; ipaddr.js alone would read it as mapped.
    for (const address of ['::127.0.0.1', '::7f00:1', '[::7f00:1]', '::169.254.169.254', '::8.8.8.8', '::ffff:0:7f00:1']) assert.ok(policy.refusal(address), address);
    const allowing = new DestinationPolicy(['127.0.0.1/32']);
    assert.match(allowing.refusal('::127.0.0.1') ?? '', /IPv4-compatible/);
    assert.equal(allowing.refusal('::ffff:127.0.0.1'), null);
    assert.equal(allowing.hostRefusal('127.0.0.1'), null);
    assert.ok(allowing.hostRefusal('localhost'), 'localhost is also ::1, which is not allowed');
    assert.equal(new DestinationPolicy(['127.0.0.1/32', '::1/128']).hostRefusal('localhost'), null);
    assert.equal(policy.hostRefusal('example.com'), null, 'other names wait for connect time');
  });

  it(`refuses each of ${REFUSED.length} forms when a delivery connects, before any byte is sent`, async () => {
    const rx = await Receiver.start();
    const client = new WebhookHttpClient({ policy: new DestinationPolicy(), connectTimeoutMs: 500, timeoutMs: 1000 });
    try {
      for (const [form, url] of REFUSED) {
        const result = await client.send(url(rx.port), { 'content-type': 'application/json' }, '{}');
        assert.equal(result.failure, 'refused', `${form}: ${url(rx.port)} -> ${result.failure} ${result.error}`);
        // The tenant is told the rule alone, never what a name resolved to (no probing of internal names).
        assert.match(result.error ?? '', /^destination refused \(rule: [A-Za-z0-9_]+\)$/, form);
        assert.ok(result.detail, `${form}: the operator's log gets the detail`);
      }
      assert.equal(rx.received.length, 0);
    } finally {
      client.close();
      await rx.close();
    }
  });
});

for (const kind of STORES) {
  describe(`webhook destinations on ${kind.name} (default policy)`, { skip: kind.skip }, () => {
    let h: Harness;
    let rx: Receiver;
    let key: string;
    let agentId: string;
    before(async () => {
      h = await startHarness(kind.name);
      rx = await Receiver.start();
      key = (await h.account({ rateLimitPerMinute: 100_000 })).apiKey;
      ({ agentId } = await createFlowAgent(h, key));
    });
    after(async () => {
      await rx.close();
      await h.close();
    });

    /** Every way a delivery URL is set, each with `url`: the request, and the field its errors name. */
    const setters = (url: string): Array<[string, string, string, unknown]> => [
      ['url', 'POST', '/api/v1/webhooks/set.php', { url, events: ['*'] }],
      ['webhook_url', 'POST', '/create-agent', { response_engine: { type: 'conversation_flow', conversation_flow_id: 'cf_x' }, webhook_url: url }],
      ['webhook_url', 'PATCH', `/update-agent/${agentId}`, { webhook_url: url }],
      ['agent_override.agent.webhook_url', 'POST', '/v2/create-web-call', { agent_id: agentId, agent_override: { agent: { webhook_url: url } } }],
    ];
    const stored = async () => ({
      webhooks: (await h.request({ method: 'GET', url: '/api/v1/webhooks/list.php', key })).json.webhooks.length,
      versions: (await h.request({ method: 'GET', url: `/get-agent-versions/${agentId}`, key })).json.length,
      calls: (await h.request({ method: 'POST', url: '/v2/list-calls', key, body: {} })).json.length,
    });

    it(`refuses each of ${REFUSED.length} forms wherever a delivery URL is set, saying why`, async () => {
      const before = await stored();
      for (const [form, url] of REFUSED) {
        for (const [field, method, path, body] of setters(url(rx.port))) {
          const res = await h.request({ method, url: path, key, body });
          const label = `${form}: ${method} ${path} ${url(rx.port)} -> ${res.status} ${res.raw.slice(0, 200)}`;
          assert.equal(res.status, 400, label);
          assert.equal(res.json.code, 'invalid_request', label);
          assert.ok(res.json.message.startsWith(`${field} is not an allowed webhook destination: `), label);
        }
      }
      assert.deepEqual(await stored(), before);
    });

    it('refuses URLs with a user name or password, saying why, and keeps allowing public destinations', async () => {
      const before = await stored();
      for (const url of WITH_CREDENTIALS) {
        for (const [field, method, path, body] of setters(url)) {
          const res = await h.request({ method, url: path, key, body });
          assert.equal(res.status, 400, `${method} ${path} ${url}: ${res.raw}`);
          assert.match(res.json.message, new RegExp(`^${field.replace(/\./g, '\\.')} must not contain a user name or password`), res.raw);
        }
      }
      assert.deepEqual(await stored(), before);
      for (const url of ALLOWED) {
        const res = await h.request({ method: 'POST', url: '/api/v1/webhooks/set.php', key, body: { url, events: ['lead.created'] } });
        assert.equal(res.status, 201, `${url}: ${res.raw}`);
        const agent = await h.request({ method: 'PATCH', url: `/update-agent/${agentId}`, key, body: { webhook_url: url } });
        assert.equal(agent.status, 200, `${url}: ${agent.raw}`);
      }
      const listed = (await h.request({ method: 'GET', url: '/api/v1/webhooks/list.php', key })).json.webhooks.map((w: any) => w.url);
      assert.ok(!listed.some((url: string) => url.includes('@')), 'no credentials are stored or shown');
    });

    it('refuses every form again when a delivery connects, recorded in the log, never retried', async () => {
      // Subscriptions stored as if set while the policy allowed them (WEBHOOK_ALLOWED_CIDRS narrowed later).
      const { apiKey, accountId } = await h.account();
      const repository = new WebhookRepository(h.runtime.store.db, h.runtime.store.dialect);
      const permissive = new WebhookService({
        store: h.runtime.store,
        webhooks: repository,
        outbox: new WebhookOutbox({ webhooks: repository, clock: h.clock }),
        box: SecretBox.fromConfig(h.config.webhooks.secretKeys, h.config.dataDir),
        clock: h.clock,
        destinations: { hostRefusal: () => null },
      });
      for (const [, url] of REFUSED) await permissive.setWebhook(accountId, { url: url(rx.port), events: ['*'] });
      await createLead(h, apiKey);
      await drainDeliveries(h.runtime.services.webhookPump);
      assert.equal(rx.received.length, 0);
      const log = await deliveries(h, apiKey, '?limit=200');
      assert.equal(log.length, REFUSED.length);
      for (const d of log) {
        assert.equal(d.status, 'failed', d.url);
        assert.equal(d.next_attempt_at, null, d.url);
        assert.equal(d.attempts[0].outcome, 'refused', `${d.url}: ${d.last_error}`);
        assert.match(d.last_error, /^destination refused \(rule: [A-Za-z0-9_]+\)$/, d.url);
      }
    });
  });
}
