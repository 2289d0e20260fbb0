import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledStatement } from '../../src/storage/compiled.ts';
import { STORES, type TestStore, openTestStore } from '../helpers/stores.ts';

for (const kind of STORES) {
  describe(`compiled statements on ${kind.name}`, { skip: kind.skip }, () => {
    let t: TestStore;
    before(async () => {
      t = await openTestStore(kind.name);
    });
    after(() => t.close());

    const insert = () => new CompiledStatement<never>(t.store, 'insert into server_secrets (name, value, created_at) values (?, ?, ?)');
    const select = () => new CompiledStatement<{ name: string }>(t.store, 'select name from server_secrets where name = ?');

    it('runs with ? placeholders on both dialects, on the root handle and in a transaction', async () => {
      await insert().all(t.store.db, ['plain', 'v', 1]);
      assert.deepEqual((await select().all(t.store.db, ['plain'])).map((row) => ({ ...row })), [{ name: 'plain' }]);
      await t.store.db.transaction().execute(async (trx) => {
        await insert().all(trx, ['in-trx', 'v', 1]);
        assert.equal((await select().first(trx, ['in-trx']))?.name, 'in-trx');
      });
      assert.equal((await select().first(t.store.db, ['in-trx']))?.name, 'in-trx');
    });

    it('never joins a transaction that is open when it is issued on the root handle', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const transaction = t.store.db
        .transaction()
        .execute(async (trx) => {
          await insert().all(trx, ['rolled-back', 'v', 1]);
          await held;
          throw new Error('roll back');
        })
        .catch(() => 'rolled back');
      await new Promise((resolve) => setTimeout(resolve, 20)); // the transaction is open now
      const outside = insert().all(t.store.db, ['outside', 'v', 1]);
      release();
      assert.equal(await transaction, 'rolled back');
      await outside;
      assert.equal(await select().first(t.store.db, ['rolled-back']), undefined);
      assert.equal((await select().first(t.store.db, ['outside']))?.name, 'outside', 'committed on its own');
    });
  });
}
