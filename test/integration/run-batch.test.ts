/**
 * How a batch's runs reach the `runs` table (server/store/batching/run-batch.ts): every value a client can
 * choose arrives exactly as sent, through the text path (each run a JSON array read by position, the
 * documents as the text they arrived in) and through the parameter path the encrypting pool uses
 * (objects read by name); a value Postgres cannot store fails the batch with INVALID_ARGUMENT and
 * stores nothing of it.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { JsonTexts } from "../../server/store/json-text.js";
import { ensureProjectsByName } from "../../server/store/tracing/project-store.js";
import { type RunRow, type RunWriteOptions, upsertPostedRuns } from "../../server/store/tracing/run-store.js";
import { inWorkspaceScope } from "../../server/store/tracing/workspace-scope.js";
import { createIngestService, type IngestActor } from "../../server/tracing/ingest-service.js";
import { normalizeRun } from "../../server/tracing/run-normalizer.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let actor: IngestActor;
let projectId: string;

beforeAll(async () => {
  const workspaceId = await createTestWorkspace(db().sql);
  actor = { workspaceId, userId: null, apiKeyId: null };
  const projects = await inWorkspaceScope(db().sql, [workspaceId], (tx) =>
    ensureProjectsByName(tx, workspaceId, ["hostile"]),
  );
  projectId = projects.get("hostile") as string;
});

/** Strings that COPY text, JSON, Postgres array literals or SQL could each get wrong. */
const HOSTILE = [
  'quote " and backslash \\ and \\" both',
  "tab\there, newline\nhere, carriage return\rhere",
  "\\N",
  "NULL",
  "",
  " padded ",
  "comma, {brace} and [bracket]",
  "unicode é ü 漢字 and an emoji 😀",
  "'; drop table runs; --",
  "\\u0041 as text, not an escape",
];

/** A run as a client posts it. */
interface PostedRun {
  id: string;
  name: string;
  run_type: string;
  dotted_order: string;
  trace_id: string;
  parent_run_id?: string;
  reference_example_id: string;
  error: string;
  [field: string]: unknown;
}

/** A trace of a root and a child whose every client-chosen value is hostile. */
function hostileTrace(): [PostedRun, PostedRun] {
  const rootId = uuidv7();
  const childId = uuidv7();
  const stamp = "20260101T000000000001Z";
  const rootDotted = `${stamp}${rootId}`;
  const document = {
    texts: HOSTILE,
    [HOSTILE[0] as string]: { nested: HOSTILE[1] },
    n: 1.5,
    b: false,
    z: null,
  };
  const common = {
    session_name: "hostile",
    tags: HOSTILE,
    error: HOSTILE.join(" | "),
    inputs: document,
    outputs: { ...document, usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } },
    extra: { metadata: { note: HOSTILE[1] }, other: HOSTILE[0] },
    events: [{ name: "start", detail: HOSTILE[2] }],
    serialized: { name: HOSTILE[6] },
    end_time: "2026-01-01T00:00:01.000000Z",
    reference_example_id: uuidv7(),
  };
  return [
    {
      id: rootId,
      name: HOSTILE[0] as string,
      run_type: "chain",
      dotted_order: rootDotted,
      trace_id: rootId,
      ...common,
    },
    {
      id: childId,
      name: HOSTILE[1] as string,
      run_type: "llm",
      dotted_order: `${rootDotted}.20260101T000000000002Z${childId}`,
      trace_id: rootId,
      parent_run_id: rootId,
      ...common,
    },
  ];
}

/** The stored columns a batch fills, by run id (timestamps as ISO text, numbers as text). */
async function storedRuns(ids: string[]) {
  return db().sql`
    select id, name, run_type, error, tags, dotted_order, parent_run_id, parent_run_ids,
      reference_example_id, trace_id, is_root, status, start_time::text, end_time::text,
      inputs, outputs, extra, events, serialized, own_total_tokens::text, own_prompt_tokens::text
    from runs where id = any(${ids}::uuid[]) order by id`;
}

/** The runs as the store receives them, with the documents' text remembered as a reader keeps it. */
function rowsOf(raws: readonly PostedRun[]): { rows: RunRow[]; texts: JsonTexts } {
  const texts = new JsonTexts();
  const rows = raws.map((raw) => {
    const run = normalizeRun(structuredClone(raw), "post");
    for (const value of [run.inputs, run.outputs, run.extra, run.serialized]) {
      // Pretty-printed: raw tabs and newlines between tokens, as JSON allows and clients send.
      if (value !== null) texts.remember(value, JSON.stringify(value, null, "\t"));
    }
    return Object.assign(run, { projectId });
  });
  return { rows, texts };
}

describe("a batch of runs with hostile values", () => {
  it("stores every value exactly as sent through the ingest service", async () => {
    const raws = hostileTrace();
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    await ingest.ingestRuns(actor, { post: raws });
    const stored = await storedRuns(raws.map((r) => r.id));
    expect(stored).toHaveLength(2);
    for (const row of stored) {
      const sent = raws.find((r) => r.id === row.id) as PostedRun;
      expect(row).toMatchObject({
        name: sent.name,
        run_type: sent.run_type,
        error: sent.error,
        tags: HOSTILE,
        dotted_order: sent.dotted_order,
        parent_run_id: sent.parent_run_id ?? null,
        parent_run_ids: sent.parent_run_id ? [sent.parent_run_id] : [],
        reference_example_id: sent.reference_example_id,
        trace_id: sent.trace_id,
        is_root: sent.parent_run_id === undefined,
        status: "error",
        end_time: "2026-01-01 00:00:01+00",
        inputs: sent.inputs,
        outputs: sent.outputs,
        extra: sent.extra,
        events: sent.events,
        serialized: sent.serialized,
      });
    }
  });

  it("stores the same rows from the text path and from the parameter path", async () => {
    const written: unknown[][] = [];
    for (const options of [(texts: JsonTexts) => ({ sourceTexts: texts }), () => ({})] as const) {
      const { rows, texts } = rowsOf(hostileTrace());
      const writeOptions: RunWriteOptions = options(texts);
      await inWorkspaceScope(db().sql, [actor.workspaceId], (tx) =>
        upsertPostedRuns(tx, actor.workspaceId, { userId: null, apiKeyId: null }, rows, writeOptions),
      );
      const stored = await storedRuns(rows.map((r) => r.id));
      // The ids differ between the two writes; everything else must not.
      written.push(
        stored.map(
          ({ id, trace_id, parent_run_id, parent_run_ids, reference_example_id, dotted_order, ...rest }) =>
            rest,
        ),
      );
    }
    expect(written[0]).toHaveLength(2);
    expect(written[0]).toEqual(written[1]);
    expect(written[0]?.[0]).toMatchObject({ tags: HOSTILE, own_total_tokens: "7", own_prompt_tokens: "3" });
  });

  it("refuses a NUL character in a tag with INVALID_ARGUMENT, storing nothing of the batch", async () => {
    const [root, child] = hostileTrace();
    child.tags = ["fine", "nul \u0000 here"];
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const refused = await ingest.ingestRuns(actor, { post: [root, child] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.InvalidArgument);
    expect((refused as ConnectError).rawMessage).toMatch(/NUL character/);
    expect(await storedRuns([root.id, child.id])).toHaveLength(0);
  });
});
