/**
 * The decoding layer end to end, through the clients users have: our SDK over Connect JSON, Connect
 * binary and gRPC-Web, and connect-node's gRPC transport. The same refusals on every protocol, with
 * the same message naming the field, and nothing stored: NUL and lone surrogates in strings, Struct
 * member names and keys; nesting beyond the limit (also far beyond protobuf-es's own recursion
 * limits, which only the screen before decoding can answer with INVALID_ARGUMENT); timestamps and
 * floats out of range; malformed binary messages, which connect-es alone would answer as INTERNAL.
 */
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type Client, Code, ConnectError, createClient as createServiceClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AssistantService,
  CreateAssistantRequestSchema,
} from "../../gen/agentplane/agents/v1/assistant_service_pb.js";
import { StoreService } from "../../gen/agentplane/agents/v1/store_service_pb.js";
import { UsageService } from "../../gen/agentplane/tracing/v1/usage_service_pb.js";
import type { ClientProtocol } from "../../sdk/index.js";
import {
  MAX_JSON_DEPTH,
  PROTOBUF_BINARY_RECURSION_LIMIT,
} from "../../server/transport/input/input-limits.js";
import { type Layer, lengthPrefix, nestedMessageBytes } from "../support/hostile-input/nested-bytes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let workspaceId: string;

beforeAll(async () => {
  t = await startTestApp();
  workspaceId = (await t.client().iam.identity.whoami({})).workspace!.id;
});

afterAll(async () => {
  await t?.stop();
});

interface Clients {
  assistants: Client<typeof AssistantService>;
  store: Client<typeof StoreService>;
  usage: Client<typeof UsageService>;
}

const NUL = "contains the NUL character (\\u0000), which cannot be stored";
const tooDeep = `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most a request may`;
const TIMESTAMP_RANGE = "must be a timestamp from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";

/** Our SDK over each of its protocols, and connect-node's gRPC (HTTP/2) transport. */
const protocols: [string, () => Clients][] = [
  ...(["connect", "connect-binary", "grpc-web"] as ClientProtocol[]).map(
    (protocol): [string, () => Clients] => [
      `SDK ${protocol}`,
      () => {
        // The generated clients on our SDK's transport: what reaches the server is what protobuf
        // encodes, which is what the decoding layer is tested against.
        const { transport } = t.client({ protocol });
        return {
          assistants: createServiceClient(AssistantService, transport),
          store: createServiceClient(StoreService, transport),
          usage: createServiceClient(UsageService, transport),
        };
      },
    ],
  ),
  [
    "gRPC",
    () => {
      const transport = createGrpcTransport({
        baseUrl: t.baseUrl,
        // Like our SDK: read back values as deep as the server takes (protobuf-es's default is 100).
        binaryOptions: { recursionLimit: PROTOBUF_BINARY_RECURSION_LIMIT },
        interceptors: [
          (next) => (req) => {
            req.header.set("x-api-key", t.adminKey);
            return next(req);
          },
        ],
      });
      return {
        assistants: createServiceClient(AssistantService, transport),
        store: createServiceClient(StoreService, transport),
        usage: createServiceClient(UsageService, transport),
      };
    },
  ],
];

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (reason: unknown) => ConnectError.from(reason),
  );
  if (!error) throw new Error("the call succeeded");
  return error;
}

/**
 * CreateAssistantRequest.metadata (a Struct) holding `levels` Structs inside one another,
 * as bytes written from the inside out: deeper than any encoder's recursion allows. A Struct is
 * `fields` (1) map entries of key (1) and Value (2); a Value's struct_value is field 5.
 */
function deepMetadataBytes(levels: number): Uint8Array {
  const entry: Layer = (size) =>
    new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string("a")
      .tag(2, WireType.LengthDelimited)
      .uint32(size)
      .finish();
  const metadata = lengthPrefix(CreateAssistantRequestSchema.field.metadata!.number);
  return nestedMessageBytes(levels, [lengthPrefix(5), entry, lengthPrefix(1)], metadata);
}

/** `{"a": {"a": ... {}}}`: `levels` objects inside one another. */
function nested(levels: number): JsonObject {
  let value: JsonObject = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

describe.each(protocols)("%s", (name, clients) => {
  it("refuses NUL in a Struct value, a member name and a plain string, naming the field, storing nothing", async () => {
    const { assistants, store } = clients();
    const before = (await assistants.countAssistants({})).count;
    const inValue = await refusal(
      assistants.createAssistant({ graphId: "agent", metadata: { note: "a\u0000b" } }),
    );
    expect([inValue.code, inValue.rawMessage]).toEqual([
      Code.InvalidArgument,
      `field "metadata.note" ${NUL}`,
    ]);
    const inName = await refusal(
      assistants.createAssistant({ graphId: "agent", metadata: { "k\u0000": 1 } }),
    );
    expect(inName.rawMessage).toBe(`field "metadata" has a member name "k\\u0000" that ${NUL}`);
    const inKey = await refusal(store.putItem({ namespace: ["fuzz"], key: "k\u0000", value: {} }));
    expect(inKey.rawMessage).toBe(`field "key" ${NUL}`);
    expect((await assistants.countAssistants({})).count).toBe(before);
  });

  it("takes the deepest nesting allowed and refuses more, far beyond protobuf-es's limits too", async () => {
    const { assistants } = clients();
    // The request is level 1 and metadata level 2: MAX - 1 objects in metadata fill the limit.
    const deepest = await assistants.createAssistant({
      graphId: "agent",
      metadata: nested(MAX_JSON_DEPTH - 1),
    });
    await assistants.deleteAssistant({ assistantId: deepest.assistantId });
    for (const levels of [MAX_JSON_DEPTH, 400]) {
      const error = await refusal(assistants.createAssistant({ graphId: "agent", metadata: nested(levels) }));
      expect([error.code, error.rawMessage]).toEqual([
        Code.InvalidArgument,
        `field "metadata.a.a.a.a.a.a.a…" ${tooDeep}`,
      ]);
    }
  });

  it("refuses timestamps beyond year 9999 and floats that are not finite", async () => {
    const { usage, store } = clients();
    const nan = await refusal(store.putItem({ namespace: ["fuzz"], key: "k", value: {}, ttl: Number.NaN }));
    expect(nan.rawMessage).toBe('field "ttl" must be a finite number, got NaN');
    // protobuf-es will not write such a timestamp as JSON: only the binary protocols can send one.
    if (name === "SDK connect") return;
    const far = await refusal(
      usage.getGranularUsage({
        startTime: { seconds: 1_700_000_000n },
        endTime: { seconds: 400_000_000_000n },
        workspaceIds: [workspaceId],
      }),
    );
    expect([far.code, far.rawMessage]).toEqual([Code.InvalidArgument, `field "end_time" ${TIMESTAMP_RANGE}`]);
  });
});

describe("Connect JSON", () => {
  it("refuses a lone surrogate as what it is, not as NUL", async () => {
    const error = await refusal(
      t.client({ protocol: "connect" }).agents.assistants.createAssistant({ graphId: "\ud800" }),
    );
    expect(error.rawMessage).toBe(
      'field "graph_id" contains an unpaired UTF-16 surrogate (\\ud800), which is not valid Unicode text and cannot be stored; send complete characters',
    );
  });
});

describe("raw Connect requests", () => {
  const path = "/agentplane.agents.v1.AssistantService/CreateAssistant";
  const post = (body: Uint8Array | string, contentType: string) =>
    t.fetch(path, {
      method: "POST",
      body: typeof body === "string" ? body : new Uint8Array(body),
      headers: { "content-type": contentType },
    });

  it("answers a binary message nested 20,000 levels deep with invalid_argument, not internal", async () => {
    const message = Buffer.concat([
      toBinary(CreateAssistantRequestSchema, create(CreateAssistantRequestSchema, { graphId: "agent" })),
      deepMetadataBytes(20_000),
    ]);
    const res = await post(message, "application/proto");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: "invalid_argument",
      message: `field "metadata.a.a.a.a.a.a.a…" ${tooDeep}`,
    });
  });

  it("answers malformed binary and invalid UTF-8 with invalid_argument", async () => {
    const truncated = await post(new Uint8Array([0x0a, 0x05, 0x61]), "application/proto");
    expect(truncated.status).toBe(400);
    expect(((await truncated.json()) as { message: string }).message).toMatch(
      /not a valid binary protobuf message/,
    );
    const latin1 = new BinaryWriter()
      .tag(CreateAssistantRequestSchema.field.graphId!.number, WireType.LengthDelimited)
      .bytes(new Uint8Array([0xe9]))
      .finish();
    const notUtf8 = await post(latin1, "application/proto");
    expect(await notUtf8.json()).toEqual({
      code: "invalid_argument",
      message: 'field "graph_id" is not valid UTF-8 text, as protobuf strings must be',
    });
  });

  it("answers Connect JSON nested 10,000 levels deep by naming the field", async () => {
    const json = `{"graphId":"agent","metadata":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`;
    const res = await post(json, "application/json");
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: "invalid_argument",
      message: `field "metadata.a.a.a.a.a.a.a…" ${tooDeep}`,
    });
  });
});
