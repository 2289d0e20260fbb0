import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DestinationPolicy } from '../../src/webhooks/destination-policy.ts';
import { parseRetryAfter } from '../../src/webhooks/http-client.ts';
import { retryDelayMs } from '../../src/webhooks/retry-schedule.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { serviceSignature } from '../../src/webhooks/signer.ts';
import { parseDurationMs } from '../../src/config/webhook.config.ts';
import { loadConfig } from '../../src/config/config.ts';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe('destination policy', () => {
  const policy = new DestinationPolicy();
  it('refuses loopback, private, link-local, metadata, CGNAT, ULA, multicast, unspecified and mapped forms', () => {
    for (const address of [
      '127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.100.100.200', '0.0.0.0',
      '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1',
      '::ffff:169.254.169.254', '64:ff9b::7f00:1', '2002:7f00:1::',
    ]) {
      assert.ok(policy.refusal(address), address);
    }
  });
  it('allows public unicast, and allowed ranges', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(policy.refusal(address), null, address);
    const allowing = new DestinationPolicy(['127.0.0.1/32', '10.0.0.0/8']);
    assert.equal(allowing.refusal('127.0.0.1'), null);
    assert.equal(allowing.refusal('::ffff:127.0.0.1'), null);
    assert.equal(allowing.refusal('10.9.8.7'), null);
    assert.ok(allowing.refusal('127.0.0.2'));
    assert.ok(allowing.refusal('::1'));
  });
  it('checks IP-literal hosts and resolved names alike', async () => {
    assert.ok(policy.literalRefusal('[::1]'));
    assert.equal(policy.literalRefusal('example.com'), null);
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => policy.lookup('localhost', { all: true }, (err) => resolve(err)));
    assert.equal(error?.code, 'EDESTINATIONREFUSED');
  });
});

describe('retry schedule', () => {
  const schedule = [5_000, 300_000];
  it('jitters each delay by at most 20 % and ends after the schedule', () => {
    assert.equal(retryDelayMs(1, schedule, { random: () => 0 }), 4_000);
    assert.equal(retryDelayMs(1, schedule, { random: () => 1 }), 6_000);
    assert.equal(retryDelayMs(2, schedule, { random: () => 0.5 }), 300_000);
    assert.equal(retryDelayMs(3, schedule), null);
  });
  it('never retries sooner than Retry-After, clamped to 24 h', () => {
    assert.equal(retryDelayMs(1, schedule, { random: () => 0.5, retryAfterMs: 60_000 }), 60_000);
    assert.equal(retryDelayMs(1, schedule, { random: () => 0.5, retryAfterMs: 1_000 }), 5_000);
    assert.equal(retryDelayMs(1, schedule, { random: () => 0.5, retryAfterMs: 10 * 86_400_000 }), 86_400_000);
    assert.equal(parseRetryAfter('120'), 120_000);
    assert.ok((parseRetryAfter(new Date(Date.now() + 30_000).toUTCString(), Date.now()) ?? 0) > 28_000);
    assert.equal(parseRetryAfter('soon'), null);
  });
});

describe('webhook config and secrets', () => {
  it('parses durations and reports every bad WEBHOOK_ variable by name', () => {
    assert.equal(parseDurationMs('5s'), 5_000);
    assert.equal(parseDurationMs('2h'), 7_200_000);
    assert.equal(parseDurationMs('5 parsecs'), null);
    const config = loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1s,2m', WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32, 10.0.0.0/8' });
    assert.deepEqual(config.webhooks.retryScheduleMs, [1_000, 120_000]);
    assert.deepEqual(config.webhooks.allowedCidrs, ['127.0.0.1/32', '10.0.0.0/8']);
    assert.throws(
      () => loadConfig({ WEBHOOK_SECRET_KEYS: 'short', WEBHOOK_ALLOWED_CIDRS: 'nope', WEBHOOK_RETRY_SCHEDULE: '5x', WEBHOOK_TIMEOUT_MS: 'abc', WEBHOOK_WORKER: 'maybe' }),
      (error: Error) =>
        ['WEBHOOK_SECRET_KEYS', 'WEBHOOK_ALLOWED_CIDRS', 'WEBHOOK_RETRY_SCHEDULE', 'WEBHOOK_TIMEOUT_MS', 'WEBHOOK_WORKER'].every((name) => error.message.includes(name)),
    );
  });

  it('encrypts with the first key, decrypts with any, and generates a 0600 key file when none is configured', () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const before = new SecretBox([oldKey]);
    const sealed = before.encrypt('whsec_abc');
    const rotated = new SecretBox([newKey, oldKey]);
    assert.equal(rotated.decrypt(sealed), 'whsec_abc');
    assert.equal(rotated.isCurrent(sealed), false);
    assert.equal(rotated.isCurrent(rotated.encrypt('x')), true);
    assert.throws(() => new SecretBox([newKey]).decrypt(sealed), /not among/);
    const tampered = sealed.slice(0, -3) + (sealed.endsWith('A') ? 'BBB' : 'AAA');
    assert.throws(() => before.decrypt(tampered));

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-key-'));
    try {
      const first = SecretBox.fromConfig([], dir);
      const stat = fs.statSync(path.join(dir, 'webhook-secret.key'));
      assert.equal(stat.mode & 0o777, 0o600);
      assert.equal(SecretBox.fromConfig([], dir).decrypt(first.encrypt('same key')), 'same key');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reproduces GitHub's published X-Hub-Signature-256 test vector", () => {
    assert.equal(
      serviceSignature("It's a Secret to Everybody", 'Hello, World!'),
      'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
  });
});

describe('the README verification snippet', () => {
  it('verifies a signed delivery with node:crypto alone, and refuses a tampered one', async () => {
    const { generateWebhookSecret, signedHeaders, deliveryBody } = await import('../../src/webhooks/signer.ts');
    const doc = fs.readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(code, 'docs/webhooks.md has a js snippet');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-snippet-'));
    try {
      const file = path.join(dir, 'verify.mjs');
      fs.writeFileSync(file, code);
      const { verifySwitchboard } = (await import(file)) as { verifySwitchboard: (raw: Buffer, headers: Record<string, string>, secret: string) => any };
      const secret = generateWebhookSecret();
      const body = deliveryBody('lead.created', '{"id":1,"name":"Ada","phone":"555"}', Date.now());
      const headers = { ...signedHeaders(secret, 'lead.created', 'evt_1', Date.now(), body) } as unknown as Record<string, string>;
      assert.equal(verifySwitchboard(Buffer.from(body), headers, secret).data.name, 'Ada');
      assert.throws(() => verifySwitchboard(Buffer.from(body.replace('Ada', 'Eve')), headers, secret));
      assert.throws(() => verifySwitchboard(Buffer.from(body), headers, generateWebhookSecret()));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
