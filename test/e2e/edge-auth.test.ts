/**
 * Custom auth at the edges (test/e2e/fixtures/edge-graphs/langgraph.auth.json: the bearer token
 * names the user, every resource is filtered by `metadata.owner`, store items by a namespace that
 * holds the user), through the official `@langchain/langgraph-sdk` as two users, compared with what
 * the LangGraph JS server (`langgraphjs dev` 1.5.1) answered to the same calls (captured into the
 * fixture's `js-server-answers.json` by `bench/capture-js-edges.ts`; CI never runs it):
 *
 * - a user streams and joins their own runs, on a thread and stateless (item 13);
 * - a store handler's filter scopes items, as on the JS server (item 14);
 * - copying another user's thread answers 409, as there (item 15);
 * - the system assistants are hidden from users whose filter they fail, and each graph still
 *   runs by its graph id (item 16).
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customAuth, type EdgeAnswers, edgeTarget } from "../support/edge-scenarios.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURE = "test/e2e/fixtures/edge-graphs";

let t: TestApp;
let js: EdgeAnswers["auth"];
let ours: Awaited<ReturnType<typeof customAuth>>;

beforeAll(async () => {
  js = (JSON.parse(await readFile(`${FIXTURE}/js-server-answers.json`, "utf8")) as EdgeAnswers).auth;
  t = await startTestApp({ graphConfigPath: `${FIXTURE}/langgraph.auth.json` });
  ours = await customAuth(edgeTarget(t.baseUrl));
});
afterAll(async () => {
  await t?.stop();
});

describe("custom auth with owner filters", () => {
  it("streams a user's own runs, joined too, on a thread and stateless (item 13)", () => {
    const run = ["metadata", "values", "values"];
    expect(ours.streamed).toEqual(run);
    expect(ours.joined).toEqual(run);
    expect(ours.statelessJoined).toEqual(run);
    expect({ streamed: ours.streamed, joined: ours.joined, statelessJoined: ours.statelessJoined }).toEqual({
      streamed: js.streamed,
      joined: js.joined,
      statelessJoined: js.statelessJoined,
    });
  });

  it("scopes store items by the store handler's filter, as the JS server does (item 14)", () => {
    expect(ours.store).toEqual({
      putOwn: { ok: {} },
      putOutside: { status: 403 },
      getOwn: { ok: { v: 1 } },
      getByOther: { status: 404 },
      getMissing: { ok: null },
      overwriteByOther: { status: 404 },
      searchOwn: { ok: ["k1"] },
      searchByOther: { ok: [] },
      namespacesOwn: { ok: [["alice", "notes"]] },
      namespacesByOther: { ok: [] },
      deleteByOther: { status: 404 },
      deleteMissingOutside: { status: 403 },
      deleteOwn: { ok: {} },
    });
    // A put and a delete answer 200 `{}` here, 204 there (the SDK reads `{}` and undefined).
    const emptied = { ...ours.store, putOwn: {}, deleteOwn: {} };
    expect(emptied).toEqual(js.store);
  });

  it("answers 409 to a copy of another user's thread, and copies one's own (item 15)", () => {
    expect(ours.copyByOther).toEqual({ status: 409 });
    expect(ours.copyOwn).toEqual({ ok: "alice" });
    expect({ copyByOther: ours.copyByOther, copyOwn: ours.copyOwn }).toEqual({
      copyByOther: js.copyByOther,
      copyOwn: js.copyOwn,
    });
  });

  it("hides the system assistants from a user whose filter they fail, and still runs the graph (item 16)", () => {
    expect(ours.assistants).toEqual({
      searchSystem: { ok: 0 },
      getSystem: { status: 404 },
      schemasSystem: { status: 404 },
      runByGraphId: { ok: { text: "echo: x", stamp: "none" } },
      searchOwn: { ok: [{ owner: "alice" }] },
      getByOther: { status: 404 },
    });
    expect(ours.assistants).toEqual(js.assistants);
  });
});
