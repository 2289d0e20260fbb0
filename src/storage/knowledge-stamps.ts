/**
 * The content stamps of knowledge bases, remembered between searches on PostgreSQL while change
 * notifications say they are current (issue 29).
 *
 * A search needs each base's content stamp (knowledge-term-stats.ts) to know whether its index is
 * current; reading it costs a round trip to the store. On PostgreSQL a trigger on
 * knowledge_base_sources (migration 0027) NOTIFYs `knowledge_changes` with the base's id when a
 * change of its sources commits, so a stamp read while the LISTEN connection was up stays current
 * until a notification names its base. A stamp is read again when:
 *  - its base was notified (a change committed on any server) or changed through this process
 *    (until the change's own notification arrives: a rolled-back change only costs reads);
 *  - the LISTEN connection is down, or was lost since the stamp was read (notifications may have
 *    been missed meanwhile): every stamp is forgotten at the loss, and none is kept until the
 *    connection is back;
 *  - a notification arrived while the stamp was being read (the read may predate the change).
 * So a change on any server is seen by every search that starts after its notification reaches
 * this server (a round trip after the commit), and by every search while notifications may be
 * missed. SQLite needs none of this: its stamp read stays in the process.
 */
import type { ContentStamp } from './knowledge-term-stats.ts';
import type { NotificationHandlers } from './pg-notifications.ts';

/** What the stamps listen to: PgNotifications. */
export interface KnowledgeChangeFeed {
  subscribe(channel: 'knowledge_changes', handlers: NotificationHandlers): void;
  /** True while a change committed now would be notified. */
  readonly listening: boolean;
}

/** Bases whose stamps are remembered at most (least recently read forgotten first). */
const MAX_REMEMBERED = 10_000;

export class KnowledgeStamps {
  readonly #feed: KnowledgeChangeFeed;
  readonly #stamps = new Map<string, ContentStamp>();
  /** Bases changed through this process whose notification has not arrived yet. */
  readonly #unsettled = new Set<string>();
  /** Bumped by every notification, loss and resync: a read overlapping one is not remembered. */
  #events = 0;
  /** Stamp reads made (for tests and the benchmark). */
  reads = 0;

  constructor(feed: KnowledgeChangeFeed) {
    this.#feed = feed;
    feed.subscribe('knowledge_changes', {
      onMessage: (baseId) => {
        this.#events++;
        this.#stamps.delete(baseId);
        this.#unsettled.delete(baseId);
      },
      onResync: () => this.#forgetAll(),
      onLost: () => this.#forgetAll(),
    });
  }

  /**
   * The stamps of `baseIds` (bases without sources are absent): those remembered, and the others
   * read with `read` (one round trip for all of them).
   */
  async stamps(baseIds: readonly string[], read: (ids: readonly string[]) => Promise<Map<string, ContentStamp>>): Promise<Map<string, ContentStamp>> {
    const result = new Map<string, ContentStamp>();
    const missing: string[] = [];
    const listening = this.#feed.listening;
    for (const id of baseIds) {
      const stamp = listening ? this.#stamps.get(id) : undefined;
      if (!stamp) missing.push(id);
      else if (stamp.sources > 0) result.set(id, stamp);
    }
    if (missing.length === 0) return result;
    const events = this.#events;
    this.reads++;
    const read_ = await read(missing);
    const keep = listening && this.#feed.listening && events === this.#events;
    for (const id of missing) {
      // A base without sources has the empty stamp: remembered too, so its search reads nothing.
      const stamp = read_.get(id) ?? { sources: 0, updatedAt: 0, chunks: 0 };
      if (read_.has(id)) result.set(id, stamp);
      if (keep && !this.#unsettled.has(id)) {
        this.#stamps.delete(id);
        this.#stamps.set(id, stamp);
      }
    }
    while (this.#stamps.size > MAX_REMEMBERED) this.#stamps.delete(this.#stamps.keys().next().value!);
    return result;
  }

  /**
   * A change of the base's sources is being written through this process: its stamp is read
   * again by every search until the change's notification arrives (so a search on this server
   * after the commit never waits for it).
   */
  changing(baseId: string): void {
    this.#events++;
    this.#stamps.delete(baseId);
    this.#unsettled.add(baseId);
  }

  #forgetAll(): void {
    this.#events++;
    this.#stamps.clear();
    this.#unsettled.clear();
  }
}
