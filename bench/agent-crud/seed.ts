import type { JsonClient } from "./json-client.js";
import {
  expectStatus,
  expectThread,
  ITEM_NAMESPACES,
  itemOf,
  namespaceLabel,
  SEED_ITEMS,
  SEED_THREADS,
  SEED_USERS,
  type Seeded,
  seedThreadMetadata,
} from "./operations.js";

/** Runs `task(0)` … `task(count - 1)` with `concurrency` workers pulling the next index. */
async function forEachConcurrently(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) await task(i);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Throws unless POST /threads/count with `metadata` answers `expected`. */
async function expectThreadCount(
  client: JsonClient,
  metadata: Record<string, string>,
  expected: number,
): Promise<void> {
  const answer = await client.send("POST", "/threads/count", { metadata });
  expectStatus(answer, [200]);
  if (answer.json !== expected)
    throw new Error(`count of ${JSON.stringify(metadata)} is ${answer.text}, expected ${expected}`);
}

/**
 * Seeds a server through its REST API, `concurrency` requests at a time: {@link SEED_THREADS}
 * threads and {@link SEED_ITEMS} store items. Then checks that the server counts what the searches
 * will match: 1% of the threads per user, all of them for `bench: seed`, ten items per namespace.
 */
export async function seedServer(client: JsonClient, concurrency: number): Promise<Seeded> {
  const threadIds: string[] = new Array(SEED_THREADS);
  await forEachConcurrently(SEED_THREADS, concurrency, async (i) => {
    const answer = await client.send("POST", "/threads", { metadata: seedThreadMetadata(i) });
    threadIds[i] = expectThread(answer).thread_id;
  });
  await forEachConcurrently(SEED_ITEMS, concurrency, async (i) => {
    expectStatus(await client.send("PUT", "/store/items", itemOf(i, 0)), [200, 204]);
  });
  await expectThreadCount(client, { bench: "seed" }, SEED_THREADS);
  await expectThreadCount(client, { user: "u7" }, SEED_THREADS / SEED_USERS);
  const answer = await client.send("POST", "/store/items/search", {
    namespace_prefix: ["bench", namespaceLabel(7)],
    limit: SEED_ITEMS,
  });
  expectStatus(answer, [200]);
  const found = (answer.json as { items?: unknown[] } | undefined)?.items?.length;
  if (found !== SEED_ITEMS / ITEM_NAMESPACES)
    throw new Error(
      `namespace ["bench","${namespaceLabel(7)}"] holds ${found} items, expected ${SEED_ITEMS / ITEM_NAMESPACES}`,
    );
  return { threadIds };
}
