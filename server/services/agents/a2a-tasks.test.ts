import type { JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";
import type { ThreadRecord } from "../../store/agents/thread-store.js";
import type { A2aMessage } from "./a2a-protocol.js";
import { historyOf, inputOf, resumeValueOf, type TaskContext, taskOf, taskState } from "./a2a-tasks.js";

const at = new Date("2026-01-02T03:04:05.000Z");

function run(overrides: Partial<AgentRunRecord> = {}): AgentRunRecord {
  return {
    workspaceId: "w",
    runId: "r1",
    threadId: "t1",
    assistantId: "a",
    graphId: "g",
    status: "success",
    metadata: {},
    kwargs: {},
    multitaskStrategy: "enqueue",
    temporary: false,
    attempt: 1,
    cancelAction: null,
    cancelReason: null,
    output: null,
    notBefore: at,
    createdAt: at,
    updatedAt: at,
    encryptionContext: null,
    creator: { apiKeyId: null, userId: null },
    ...overrides,
  };
}

function thread(overrides: Partial<ThreadRecord> = {}): ThreadRecord {
  return {
    threadId: "t1",
    metadata: {},
    config: {},
    status: "idle",
    values: null,
    interrupts: {},
    error: null,
    createdAt: at,
    updatedAt: at,
    stateUpdatedAt: at,
    ttl: null,
    ...overrides,
  };
}

function ctx(r: AgentRunRecord, th: ThreadRecord | undefined, superseded = false): TaskContext {
  return { taskId: "task", run: r, thread: th, superseded };
}

function message(parts: A2aMessage["parts"], role: A2aMessage["role"] = "user"): A2aMessage {
  return { kind: "message", messageId: "m1", role, parts };
}

describe("taskState", () => {
  it("maps run statuses, and an interrupted thread makes its last successful run input-required", () => {
    expect(taskState(ctx(run({ status: "pending" }), thread()))).toBe("submitted");
    expect(taskState(ctx(run({ status: "running" }), thread()))).toBe("working");
    expect(taskState(ctx(run({ status: "error" }), thread()))).toBe("failed");
    expect(taskState(ctx(run({ status: "timeout" }), thread()))).toBe("failed");
    expect(taskState(ctx(run({ status: "interrupted" }), thread()))).toBe("canceled");
    expect(taskState(ctx(run(), thread()))).toBe("completed");
    expect(taskState(ctx(run(), thread({ status: "interrupted" })))).toBe("input-required");
    // A later run on the thread took the thread's state over: this task's question is gone.
    expect(taskState(ctx(run(), thread({ status: "interrupted" }), true))).toBe("completed");
    expect(taskState(ctx(run(), undefined))).toBe("completed");
  });
});

describe("historyOf", () => {
  it("keeps human and AI messages with text, reading content blocks, and names each message", () => {
    const values: JsonValue = {
      messages: [
        { type: "human", content: "hi", id: "h1" },
        { type: "ai", content: "", tool_calls: [{ name: "x" }], id: "a0" },
        { type: "tool", content: "42", id: "t1" },
        {
          type: "ai",
          content: [{ type: "text", text: "the " }, { type: "image_url" }, { type: "text", text: "answer" }],
        },
        { type: "system", content: "be nice" },
      ],
    };
    expect(historyOf(values, "task", "ctx")).toEqual([
      {
        kind: "message",
        messageId: "h1",
        role: "user",
        parts: [{ kind: "text", text: "hi" }],
        contextId: "ctx",
        taskId: "task",
      },
      {
        kind: "message",
        messageId: "task-3",
        role: "agent",
        parts: [{ kind: "text", text: "the answer" }],
        contextId: "ctx",
        taskId: "task",
      },
    ]);
    expect(historyOf({ messages: ["not", "objects"] }, "task", "ctx")).toEqual([]);
    expect(historyOf(null, "task", "ctx")).toEqual([]);
  });
});

describe("taskOf", () => {
  it("asks an interrupt's value, says why a run failed, and leaves history out for 0", () => {
    const asking = taskOf(
      ctx(run(), thread({ status: "interrupted", interrupts: { task1: [{ id: "i", value: "sure?" }] } })),
      0,
    );
    expect(asking.status.state).toBe("input-required");
    expect(asking.status.message?.parts).toEqual([{ kind: "text", text: "sure?" }]);
    expect(asking.history).toBeUndefined();
    expect(asking.status.timestamp).toBe("2026-01-02T03:04:05.000Z");

    const failed = taskOf(
      ctx(run({ status: "error", output: { __error__: { error: "E", message: "m" } } }), thread()),
      5,
    );
    expect(failed.status.message?.parts).toEqual([{ kind: "text", text: "E: m" }]);
    expect(failed.artifacts).toBeUndefined();
  });

  it("answers a completed run's last AI message as its artifact, else its values as data", () => {
    const chat = taskOf(
      ctx(run({ output: { messages: [{ type: "ai", content: "done" }] } }), undefined),
      undefined,
    );
    expect(chat.artifacts).toEqual([
      { artifactId: "r1", name: "result", parts: [{ kind: "text", text: "done" }] },
    ]);
    const data = taskOf(ctx(run({ output: { total: 3 } }), undefined), undefined);
    expect(data.artifacts?.[0]?.parts).toEqual([{ kind: "data", data: { total: 3 } }]);
    expect(taskOf(ctx(run({ output: {} }), undefined), undefined).artifacts).toBeUndefined();
  });
});

describe("inputOf and resumeValueOf", () => {
  it("merges data parts and makes text parts one message", () => {
    expect(
      inputOf(
        message([
          { kind: "data", data: { a: 1 } },
          { kind: "text", text: "x" },
          { kind: "text", text: "y" },
        ]),
      ),
    ).toEqual({
      input: { a: 1, messages: [{ role: "human", content: "x\ny", id: "m1" }] },
      hasText: true,
    });
    expect(inputOf(message([{ kind: "text", text: "x" }], "agent")).input.messages).toEqual([
      { role: "ai", content: "x", id: "m1" },
    ]);
    expect(inputOf(message([{ kind: "data", data: { a: 1 } }]))).toEqual({ input: { a: 1 }, hasText: false });
  });

  it("answers an interrupt with the text, the data, or both", () => {
    expect(resumeValueOf(message([{ kind: "text", text: "yes" }]))).toBe("yes");
    expect(resumeValueOf(message([{ kind: "data", data: { ok: true } }]))).toEqual({ ok: true });
    expect(
      resumeValueOf(
        message([
          { kind: "data", data: { ok: true } },
          { kind: "text", text: "y" },
        ]),
      ),
    ).toEqual({
      ok: true,
      text: "y",
    });
  });
});
