import { setTimeout as sleep } from "node:timers/promises";
import { clone, create, fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { type BoundService, bindService } from "../../server/transport/bound-service.js";
import { ItemSchema, Kind, TranscodingService } from "../gen/agentplane/testing/v1/transcoding_service_pb.js";

/** What the test service observed, for assertions the HTTP response cannot show. */
export interface TranscodingProbe {
  /** `x-api-key` of every call the guard let through (null when absent). */
  readonly apiKeys: (string | null)[];
  /** `Last-Event-ID` of every StreamEvents call (null when absent). */
  readonly lastEventIds: (string | null)[];
  /** One entry per WatchItems call whose `finally` ran: was its signal aborted then? */
  readonly watchFinished: { aborted: boolean }[];
  /** Errors the bound service reported as internal (never shown to clients). */
  readonly internalErrors: unknown[];
}

/** The API key the guard refuses, to test authentication errors through the guard. */
export const rejectedApiKey = "wrong-key";

/** A fixed creation time, so responses compare equal across protocols. */
const fixedCreatedAt = timestampFromDate(new Date("2024-05-06T07:08:09.010Z"));

/** 2^53 + 1: a 64-bit value a JSON number would corrupt, so REST must send it as a string. */
const heavyWeight = 9_007_199_254_740_993n;

/** Connect codes by their wire names (`not_found` → Code.NotFound). */
const codesByName = new Map(
  Object.entries(Code)
    .filter((entry): entry is [string, Code] => typeof entry[1] === "number")
    .map(([name, code]) => [name.replace(/(?<=[a-z])(?=[A-Z])/g, "_").toLowerCase(), code]),
);

function sampleItem(id: string, shelf = ""): MessageInitShape<typeof ItemSchema> {
  return {
    id,
    name: `item ${id}`,
    tags: ["red", "small"],
    quantity: 3,
    weight: heavyWeight,
    kind: Kind.BOOK,
    createdAt: fixedCreatedAt,
    shelf,
    owner: { name: "Ann", email: "ann@example.com" },
  };
}

function failure(code: string, message: string): Error {
  // A plain Error stands for a bug: the bound service must hide it behind "internal error".
  if (code === "bug") return new Error("SELECT secret FROM credentials failed at db.ts:42");
  return new ConnectError(message || `failed with ${code}`, codesByName.get(code) ?? Code.InvalidArgument);
}

function aborted(ctx: HandlerContext): Promise<void> {
  return new Promise((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/**
 * The implementation of agentplane.testing.v1.TranscodingService (see its proto for what each
 * method exercises), bound with a guard that refuses {@link rejectedApiKey}.
 */
export function createTranscodingService(): { bound: BoundService; probe: TranscodingProbe } {
  const probe: TranscodingProbe = { apiKeys: [], lastEventIds: [], watchFinished: [], internalErrors: [] };

  const impl: ServiceImpl<typeof TranscodingService> = {
    getItem({ id, shelf }) {
      if (id === "missing") throw new ConnectError(`item ${id} not found`, Code.NotFound);
      return sampleItem(id, shelf);
    },
    getBook({ name }) {
      return { name };
    },
    createItem(request, ctx) {
      ctx.responseHeader.set("location", "/v1/items/new-1");
      ctx.responseHeader.set("content-location", "/v1/items/new-1");
      const { name, tags, quantity, weight, kind, createdAt, owner } = request;
      return { id: "new-1", name, tags, quantity, weight, kind, createdAt, owner };
    },
    updateItem({ item, updateMask, validateOnly }) {
      if (validateOnly) throw new ConnectError("validate_only: nothing was changed", Code.FailedPrecondition);
      const updated = item ? clone(ItemSchema, item) : create(ItemSchema);
      updated.tags.push(`mask:${updateMask}`);
      return updated;
    },
    archiveItem({ id, reason }) {
      return { id, name: reason, archived: true };
    },
    reportItem({ id }) {
      return { id, name: "report" };
    },
    search(request) {
      return { query: request };
    },
    listItems({ limit }, ctx) {
      const total = 5;
      const count = Math.min(limit || 2, total);
      ctx.responseHeader.set("x-pagination-total", String(total));
      ctx.responseHeader.set("x-pagination-next", String(count));
      return { items: Array.from({ length: count }, (_, i) => sampleItem(`i${i + 1}`)), total };
    },
    countItems({ kind }) {
      return { count: 40 + kind };
    },
    getItemOwner({ id }) {
      return { owner: { name: `owner of ${id}`, email: "owner@example.com" } };
    },
    deleteItem({ id }) {
      if (id === "missing") throw new ConnectError(`item ${id} not found`, Code.NotFound);
      return {};
    },
    fail({ code, message }) {
      throw failure(code, message);
    },
    async *watchItems({ count, delayMs, hold, failCode, contentLocation }, ctx) {
      try {
        if (contentLocation) ctx.responseHeader.set("content-location", contentLocation);
        for (let i = 1; i <= count; i++) {
          if (delayMs > 0) await sleep(delayMs, undefined, { signal: ctx.signal });
          yield sampleItem(`w${i}`);
        }
        if (failCode) throw failure(failCode, `stream failed with ${failCode}`);
        if (hold) await aborted(ctx);
      } finally {
        probe.watchFinished.push({ aborted: ctx.signal.aborted });
      }
    },
    async *streamEvents({ count, delayMs }, ctx) {
      const lastEventId = ctx.requestHeader.get("last-event-id");
      probe.lastEventIds.push(lastEventId);
      const first = Number(lastEventId ?? 0) + 1;
      for (let n = first; n < first + count; n++) {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal: ctx.signal });
        yield { id: String(n), event: "values", data: fromJson(ValueSchema, { n, text: "line1\nline2" }) };
      }
      yield { data: fromJson(ValueSchema, { done: true }) };
    },
  };

  const bound = bindService(TranscodingService, impl, {
    guard: async (ctx) => {
      const key = ctx.requestHeader.get("x-api-key");
      if (key === rejectedApiKey) throw new ConnectError("the API key is not valid", Code.Unauthenticated);
      probe.apiKeys.push(key);
    },
    onInternalError: (error) => probe.internalErrors.push(error),
  });
  return { bound, probe };
}
