import { createHmac } from 'node:crypto';
import type { DeliveryPump } from '../../src/webhooks/delivery-pump.ts';
import type { Harness } from '../helpers/harness.ts';

/**
 * Runs rounds of the delivery pump until one handles nothing (at most `maxRounds`); returns the
 * deliveries handled. For tests that drive time with a manual clock instead of starting the worker.
 */
export async function drainDeliveries(pump: DeliveryPump, maxRounds = 100): Promise<number> {
  let total = 0;
  for (let round = 0; round < maxRounds; round += 1) {
    const handled = await pump.runOnce();
    total += handled;
    if (handled === 0) break;
  }
  return total;
}

/** Creates a webhook through set.php; returns its id and secret. */
export async function subscribe(h: Harness, key: string, url: string, events: string[]): Promise<{ id: string; secret: string }> {
  const res = await h.request({ method: 'POST', url: '/api/v1/webhooks/set.php', key, body: { url, events } });
  if (res.status !== 201) throw new Error(`set.php: ${res.status} ${res.raw}`);
  return { id: res.json.id, secret: res.json.secret };
}

export async function createLead(h: Harness, key: string, name = 'Ada', phone = '555-0100') {
  const res = await h.request({ method: 'POST', url: '/api/v1/leads/create.php', key, body: { name, phone } });
  if (res.status !== 201) throw new Error(`create lead: ${res.status} ${res.raw}`);
  return res.json;
}

export async function deliveries(h: Harness, key: string, query = '') {
  const res = await h.request({ method: 'GET', url: `/api/v1/webhooks/deliveries.php${query}`, key });
  if (res.status !== 200) throw new Error(`deliveries.php: ${res.status} ${res.raw}`);
  return res.json.deliveries as any[];
}

/** The two signatures a receiver computes from the raw bytes. */
export function expectedSignatures(secret: string, raw: Buffer, id: string, timestamp: string) {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return {
    service: `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`,
    standard: `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(raw).digest('base64')}`,
  };
}
