import type { JsonAnswer, JsonClient } from "./json-client.js";

/** Threads seeded in each server before measuring: the "10k threads present". */
export const SEED_THREADS = 10_000;
/** Seeded threads carry `metadata.user` = u0 … u99: one user's threads are 1% of them (100). */
export const SEED_USERS = 100;
/** Store items seeded in each server, over {@link ITEM_NAMESPACES} namespaces under ["bench"]. */
export const SEED_ITEMS = 1_000;
/**
 * Namespaces ["bench", "ns00"] … ["bench", "ns99"]: ten items each. Fixed width, because the JS server
 * matches a namespace prefix as a text prefix (["bench", "ns7"] would also find ["bench", "ns70"]).
 */
export const ITEM_NAMESPACES = 100;
/** The page size of every search: the API's default. */
export const PAGE = 10;
/** Enough of an unexpected answer's body to tell what went wrong, short enough for one line. */
const ERROR_BODY_CHARS = 200;

/** The operations, in the order they run: thread creation last, so that searches see exactly the seed. */
export const OPERATIONS = [
  "get-thread",
  "search-threads",
  "search-threads-all",
  "put-item",
  "search-items",
  "create-thread",
] as const;

/** One of {@link OPERATIONS}. */
export type OperationName = (typeof OPERATIONS)[number];

/** What each operation sends, for the report. */
export const OPERATION_LABELS: Record<OperationName, string> = {
  "get-thread": "GET /threads/{id}",
  "search-threads": "POST /threads/search (1% match)",
  "search-threads-all": "POST /threads/search (all match)",
  "put-item": "PUT /store/items",
  "search-items": "POST /store/items/search",
  "create-thread": "POST /threads",
};

/** One call of an operation; `seq` numbers the calls of a cell. Resolves only for a verified answer. */
export type OperationCall = (client: JsonClient, seq: number) => Promise<void>;

/** The ids of the threads seeded in one server. */
export interface Seeded {
  threadIds: string[];
}

/**
 * Knuth's multiplicative hash constant (2^32 ÷ the golden ratio): multiplying by it modulo 2^32 is a
 * bijection that scatters consecutive numbers.
 */
const SCATTER = 2_654_435_761;

/**
 * The seeded metadata of thread `i`. `n` is distinct per thread but scattered rather than `i`
 * itself: Postgres's histogram of `metadata` orders the objects by `n`, and with `n = i` its bounds
 * (every hundredth `n`) all had the same `user`, so one database's planner guessed a user's threads
 * to be one row while another's (with `n` encrypted, so ordered at random) guessed right.
 */
export function seedThreadMetadata(i: number): Record<string, string | number> {
  return { bench: "seed", user: `u${i % SEED_USERS}`, n: Math.imul(i, SCATTER) >>> 0 };
}

/** The second label of namespace `n`: ns00 … ns99. */
export function namespaceLabel(n: number): string {
  return `ns${String(n).padStart(String(ITEM_NAMESPACES - 1).length, "0")}`;
}

/** The seeded (and later overwritten) store item `i`. */
export function itemOf(i: number, version: number) {
  return {
    namespace: ["bench", namespaceLabel(i % ITEM_NAMESPACES)],
    key: `k${i}`,
    value: { text: `item ${i}`, version, tags: ["bench", "crud"] },
  };
}

/** Throws unless the answer has one of the `allowed` statuses. */
export function expectStatus(answer: JsonAnswer, allowed: readonly number[]): void {
  if (!allowed.includes(answer.status))
    throw new Error(`status ${answer.status}: ${answer.text.slice(0, ERROR_BODY_CHARS)}`);
}

type Thread = { thread_id?: unknown; metadata?: Record<string, unknown> };

/** The answer as a thread, checked to have a string id and a metadata object. */
export function expectThread(answer: JsonAnswer): Thread & { thread_id: string } {
  expectStatus(answer, [200]);
  const thread = answer.json as Thread | undefined;
  if (typeof thread?.thread_id !== "string" || typeof thread.metadata !== "object")
    throw new Error(`not a thread: ${answer.text.slice(0, ERROR_BODY_CHARS)}`);
  return thread as Thread & { thread_id: string };
}

/** Throws unless the answer is a full page of threads whose metadata has `key` = `value`. */
function expectThreadPage(answer: JsonAnswer, key: string, value: string): void {
  expectStatus(answer, [200]);
  const page = answer.json as Thread[] | undefined;
  if (!Array.isArray(page) || page.length !== PAGE)
    throw new Error(`expected ${PAGE} threads: ${answer.text.slice(0, ERROR_BODY_CHARS)}`);
  for (const thread of page)
    if (thread.metadata?.[key] !== value)
      throw new Error(`thread ${String(thread.thread_id)} does not match metadata.${key} = ${value}`);
}

/** The call of operation `name` against a server seeded with `seeded`. */
export function operationCall(name: OperationName, seeded: Seeded): OperationCall {
  const ids = seeded.threadIds;
  switch (name) {
    case "create-thread":
      return async (client, seq) => {
        const thread = expectThread(
          await client.send("POST", "/threads", { metadata: { bench: "create", seq } }),
        );
        if (thread.metadata?.seq !== seq)
          throw new Error(`created thread has metadata ${JSON.stringify(thread)}`);
      };
    case "get-thread":
      return async (client, seq) => {
        const id = ids[seq % ids.length] ?? "";
        const thread = expectThread(await client.send("GET", `/threads/${id}`));
        if (thread.thread_id !== id) throw new Error(`asked for thread ${id}, got ${thread.thread_id}`);
      };
    case "search-threads":
      return async (client, seq) => {
        const user = `u${seq % SEED_USERS}`;
        const body = { metadata: { user }, limit: PAGE };
        expectThreadPage(await client.send("POST", "/threads/search", body), "user", user);
      };
    case "search-threads-all":
      return async (client) => {
        const body = { metadata: { bench: "seed" }, limit: PAGE };
        expectThreadPage(await client.send("POST", "/threads/search", body), "bench", "seed");
      };
    case "put-item":
      return async (client, seq) => {
        // Agentplane answers 200 with `{}` (unary RPCs have no 204); the JS server answers 204.
        expectStatus(await client.send("PUT", "/store/items", itemOf(seq % SEED_ITEMS, seq)), [200, 204]);
      };
    case "search-items":
      return async (client) => {
        const answer = await client.send("POST", "/store/items/search", {
          namespace_prefix: ["bench"],
          limit: PAGE,
        });
        expectStatus(answer, [200]);
        const items = (answer.json as { items?: { namespace?: unknown[]; key?: unknown }[] } | undefined)
          ?.items;
        if (!Array.isArray(items) || items.length !== PAGE)
          throw new Error(`expected ${PAGE} items: ${answer.text.slice(0, ERROR_BODY_CHARS)}`);
        // Under custom auth the example's store handler puts the user's identity in front of every
        // namespace, so the bench's part is the end of it: ["bench", "ns<n>"].
        for (const item of items)
          if (item.namespace?.at(-2) !== "bench" || typeof item.key !== "string")
            throw new Error(`item outside ["bench"]: ${JSON.stringify(item)}`);
      };
  }
}
