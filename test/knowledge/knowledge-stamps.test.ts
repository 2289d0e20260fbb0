import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { weightedQuery } from '../../src/domain/knowledge-terms.ts';
import { chunkDocument } from '../../src/domain/knowledge-chunks.ts';
import { KnowledgeRepository } from '../../src/storage/knowledge.repository.ts';
import { LISTENER_APPLICATION_NAME, PgNotifications, notifyThrough } from '../../src/storage/pg-notifications.ts';
import { STORES, openTestStore, type TestStore } from '../helpers/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres')!;
const quiet = { warn() {}, info() {} };

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// Content stamps kept between searches while PostgreSQL's change notifications say they are
// current (src/storage/knowledge-stamps.ts, the trigger of migration 0027). SQLite reads its
// stamps in the process and has no notifications: nothing to test there.
describe('knowledge content stamps kept by change notifications on postgres', { skip: postgres.skip }, () => {
  let ts: TestStore;
  const feeds: PgNotifications[] = [];
  before(async () => {
    ts = await openTestStore('postgres');
  });
  after(async () => {
    for (const feed of feeds) await feed.close();
    await ts?.close();
  });

  /** A server of the store: its own repository and LISTEN connection; `told` counts its base's notifications. */
  async function server(): Promise<{ repo: KnowledgeRepository; feed: PgNotifications; told: string[] }> {
    const feed = new PgNotifications({ url: ts.databaseUrl!, send: notifyThrough(ts.store.db), log: quiet });
    feeds.push(feed);
    const told: string[] = [];
    feed.subscribe('knowledge_changes', { onMessage: (id) => told.push(id), onResync() {} });
    const repo = new KnowledgeRepository(ts.store, { changes: feed });
    await feed.start();
    return { repo, feed, told };
  }

  let n = 0;
  async function addSource(repo: KnowledgeRepository, baseId: string, title: string, text: string): Promise<string> {
    const id = `kbs_${(++n).toString(16).padStart(32, '0')}`;
    const now = 100 + n;
    await repo.insertSources([{ id, knowledge_base_id: baseId, type: 'text', title, format: 'text', url: null, body: null, status: 'in_progress', error: null, created_at: now, updated_at: now }]);
    await ts.store.transaction((tx) => repo.completeSource(baseId, id, chunkDocument(title, text, 'text'), now, tx));
    return id;
  }
  const texts = async (repo: KnowledgeRepository, baseId: string, question: string) => (await repo.search([baseId], weightedQuery([question]), 3)).map((c) => c.text);

  it('reads a stamp once while notified, and every server sees a change once told of it, whatever wrote it', async () => {
    const one = await server();
    const two = await server();
    const baseId = `kb_${'1'.padStart(32, '0')}`;
    await one.repo.insertBase({ id: baseId, account_id: 'acct_test', name: 'test', created_at: 1, updated_at: 1, auto_refresh: 0 });
    await addSource(one.repo, baseId, 'Opening hours', 'We open at nine and close at six.');
    // Two commits (the source added, then ingested), each notified.
    await until(() => one.told.filter((id) => id === baseId).length === 2, 'the first notifications');

    assert.deepEqual(await texts(one.repo, baseId, 'when do you close'), ['We open at nine and close at six.']);
    const reads = one.repo.stampReads;
    for (let i = 0; i < 5; i++) await texts(one.repo, baseId, 'when do you close');
    assert.equal(one.repo.stampReads, reads, 'no stamp read while nothing was notified');

    // Another server adds a source: the first is told at its commit and reads the stamp again.
    const told = one.told.length;
    const rentals = await addSource(two.repo, baseId, 'Rentals', 'Bikes are rented by the day.');
    await until(() => one.told.length === told + 2, 'the notifications of the new source');
    assert.deepEqual(await texts(one.repo, baseId, 'renting'), ['Bikes are rented by the day.']);
    assert.equal(one.repo.stampReads, reads + 1);

    // A write by no repository at all (the trigger tells of any change of the sources).
    const before = one.told.length;
    await sql`delete from knowledge_base_chunks where source_id = ${rentals}`.execute(ts.store.db);
    await sql`delete from knowledge_base_sources where id = ${rentals}`.execute(ts.store.db);
    await until(() => one.told.length > before, 'the notification of the deleted source');
    assert.deepEqual(await texts(one.repo, baseId, 'renting'), [], 'the deleted source is gone at the next search');
  });

  it('reads stamps at every search while notifications may be missed, and keeps them again once back', async () => {
    const one = await server();
    const two = await server();
    const baseId = `kb_${'2'.padStart(32, '0')}`;
    await one.repo.insertBase({ id: baseId, account_id: 'acct_test', name: 'test', created_at: 1, updated_at: 1, auto_refresh: 0 });
    await addSource(one.repo, baseId, 'Repairs', 'Punctures are mended while you wait.');
    // Two commits (the source added, then ingested), each notified.
    await until(() => one.told.filter((id) => id === baseId).length === 2, 'the first notifications');
    await texts(one.repo, baseId, 'punctures');

    // The first server's LISTEN connection is cut; a change made meanwhile is never notified to it.
    const cut = await sql<{ pid: number }>`
      select pg_terminate_backend(pid) as pid from pg_stat_activity
      where datname = current_database() and application_name = ${LISTENER_APPLICATION_NAME}`.execute(ts.store.db);
    assert.ok(cut.rows.length >= 1);
    await until(() => !one.feed.listening && !two.feed.listening, 'the loss to be seen');
    await addSource(two.repo, baseId, 'Rentals', 'Bikes are rented by the day.');
    const reads = one.repo.stampReads;
    assert.deepEqual(await texts(one.repo, baseId, 'renting'), ['Bikes are rented by the day.'], 'a change made while deaf is seen at the next search');
    await texts(one.repo, baseId, 'renting');
    assert.equal(one.repo.stampReads, reads + 2, 'every search reads the stamps while deaf');

    await until(() => one.feed.listening, 'the reconnect', 15_000);
    await texts(one.repo, baseId, 'renting');
    const back = one.repo.stampReads;
    await texts(one.repo, baseId, 'renting');
    assert.equal(one.repo.stampReads, back, 'kept again once listening');
  });

  it('refuses a channel first subscribed after the feed started (it would not be listened to)', async () => {
    const late = new PgNotifications({ url: ts.databaseUrl!, send: notifyThrough(ts.store.db), log: quiet });
    feeds.push(late);
    await late.start();
    assert.throws(() => new KnowledgeRepository(ts.store, { changes: late }), /before start/);
  });

  it('reads the stamps at every search without a feed (as before)', async () => {
    const repo = new KnowledgeRepository(ts.store);
    const baseId = `kb_${'3'.padStart(32, '0')}`;
    await repo.insertBase({ id: baseId, account_id: 'acct_test', name: 'test', created_at: 1, updated_at: 1, auto_refresh: 0 });
    await addSource(repo, baseId, 'Repairs', 'Punctures are mended while you wait.');
    await texts(repo, baseId, 'punctures');
    await texts(repo, baseId, 'punctures');
    assert.equal(repo.stampReads, 2);
  });
});
