import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import type { Config } from "../../server/config.js";
import { startTestApp, type TestApp } from "./test-app.js";

/** The graphs file of the runs tests (test/e2e/fixtures/runs-graphs). */
export const RUNS_GRAPHS = fileURLToPath(
  new URL("../e2e/fixtures/runs-graphs/langgraph.json", import.meta.url),
);

/** A test server serving the runs fixture graphs, with an official SDK client on its admin key. */
export interface RunsApp {
  readonly t: TestApp;
  readonly sdk: Client;
}

/**
 * An official `@langchain/langgraph-sdk` client for `baseUrl`. Retries are off, so a 5xx fails the
 * test instead of being retried away.
 */
export function sdkClient(baseUrl: string, apiKey: string): Client {
  return new Client({ apiUrl: baseUrl, apiKey, callerOptions: { maxRetries: 0 } });
}

/** Starts a test server on the runs fixture graphs (`overrides` as for startTestApp). */
export async function startRunsApp(overrides: Partial<Config> = {}): Promise<RunsApp> {
  const t = await startTestApp({ graphConfigPath: RUNS_GRAPHS, ...overrides });
  return { t, sdk: sdkClient(t.baseUrl, t.adminKey) };
}

/** One event of a run stream as the SDK yields it. */
export interface StreamPart {
  id?: string;
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: stream payloads are whatever the graph produced
  data: any;
}

/** Reads a stream to its end, every event included (a run stream's final `end` too). */
export async function collectAll(stream: AsyncIterable<unknown>): Promise<StreamPart[]> {
  const parts: StreamPart[] = [];
  for await (const part of stream) parts.push(part as StreamPart);
  return parts;
}

/** The run statuses a run stream's `end` event names (a rolled-back run: `rollback`). */
const END_STATUSES = ["success", "error", "timeout", "interrupted", "rollback"];

/**
 * Reads a stream to its end, without a run stream's final `end` event `{run_id, status}` (checked
 * for its shape here, and by the tests that look at it): the events the stream modes produced.
 */
export async function collect(stream: AsyncIterable<unknown>): Promise<StreamPart[]> {
  const parts = await collectAll(stream);
  const last = parts.at(-1);
  if (last?.event !== "end") return parts;
  if (typeof last.data?.run_id !== "string" || !END_STATUSES.includes(last.data?.status))
    throw new Error(`a run stream ended with a malformed end event: ${JSON.stringify(last)}`);
  return parts.slice(0, -1);
}

/** The event names of `parts`, in order. */
export function eventNames(parts: readonly StreamPart[]): string[] {
  return parts.map((p) => p.event);
}

/** `parts` without their ids (ids are checked on their own). */
export function withoutIds(parts: readonly StreamPart[]): Omit<StreamPart, "id">[] {
  return parts.map(({ event, data }) => ({ event, data }));
}

/** A human message as the SDK sends it in `input`. */
export function human(content: string, id: string) {
  return { role: "human", content, id };
}

/** A human message as LangChain.js serialises it in stream events and state. */
export function humanOut(content: string, id: string) {
  return { content, id, additional_kwargs: {}, response_metadata: {}, type: "human" };
}

/**
 * Polls `read` until `done` holds for its value or `timeoutMs` passes (then throws with the last
 * value). For states the API only shows by reading (a run turning `running`).
 */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    // A short pause between reads: the states waited for change within milliseconds to seconds.
    await new Promise((resolve) => setTimeout(resolve, 25));
    last = await read();
  }
  return last;
}
