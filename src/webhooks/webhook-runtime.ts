import type { Config } from '../config/config.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { WebhookOutbox } from '../services/webhook-outbox.ts';
import { WebhookService } from '../services/webhook.service.ts';
import type { Store } from '../storage/store.ts';
import { WebhookRepository } from '../storage/webhook.repository.ts';
import type { DestinationPolicy } from './destination-policy.ts';
import { DeliveryPump } from './delivery-pump.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { WebhookHttpClient } from './http-client.ts';
import { SecretBox } from '../lib/secret-box.ts';

export interface WebhookParts {
  repository: WebhookRepository;
  /** The server keys that encrypt stored secrets (webhook secrets, phone numbers' credentials). */
  box: SecretBox;
  outbox: WebhookOutbox;
  webhooks: WebhookService;
  dispatcher: WebhookDispatcher;
  /** The dispatcher's claim -> send -> record step (it runs a round on every wake, and closes it). */
  pump: DeliveryPump;
  /**
   * The client of custom-function requests: the same destination policy and connect timeout as
   * deliveries, its own connections (a function waits on a caller; it should not queue behind
   * deliveries); each request sets its own total timeout.
   */
  functionClient: WebhookHttpClient;
  /** Stops the worker and closes kept-alive connections; idempotent. */
  close(): Promise<void>;
}

/**
 * Wires the webhook pieces: server key, SSRF-safe client, worker, outbox and service. `policy` is
 * the process's one destination policy (the service judges URLs with it when they are set, the
 * client every address it connects to).
 */
export function createWebhookParts(config: Config, store: Store, clock: Clock, log: Logger, policy: DestinationPolicy): WebhookParts {
  const settings = config.webhooks;
  const repository = new WebhookRepository(store.db, store.dialect);
  const box = SecretBox.fromConfig(settings.secretKeys, config.dataDir);
  const client = new WebhookHttpClient({
    policy,
    connectTimeoutMs: settings.connectTimeoutMs,
    timeoutMs: settings.timeoutMs,
    maxSocketsPerHost: settings.concurrency,
  });
  const functionClient = new WebhookHttpClient({ policy, connectTimeoutMs: settings.connectTimeoutMs, timeoutMs: settings.timeoutMs });
  const pump = new DeliveryPump({
    store,
    webhooks: repository,
    client,
    box,
    clock,
    log,
    retryScheduleMs: settings.retryScheduleMs,
    timeoutMs: settings.timeoutMs,
    disableAfterMs: settings.disableAfterMs,
    concurrency: settings.concurrency,
    endpointConcurrency: settings.endpointConcurrency,
  });
  const dispatcher = new WebhookDispatcher({ pump, store, webhooks: repository, pollIntervalMs: settings.pollIntervalMs });
  const wake = () => dispatcher.wake();
  const outbox = new WebhookOutbox({ webhooks: repository, clock, onRecorded: wake });
  const webhooks = new WebhookService({ store, webhooks: repository, box, clock, destinations: policy, wake, outbox });
  let closing: Promise<void> | null = null;
  return {
    repository,
    box,
    outbox,
    webhooks,
    dispatcher,
    pump,
    functionClient,
    close() {
      closing ??= dispatcher.close().finally(() => {
        client.close();
        functionClient.close();
      });
      return closing;
    },
  };
}
