import {
  create,
  createFileRegistry,
  type DescService,
  type MessageInitShape,
  setExtension,
} from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { http } from "../../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../../gen/google/api/http_pb.js";
import { TranscodingService } from "../../../test/gen/agentplane/testing/v1/transcoding_service_pb.js";
import { createRouteTable, type RouteLookup } from "./route-table.js";

type RuleInit = MessageInitShape<typeof HttpRuleSchema>;

/** The parts of a rule besides its pattern. */
interface RuleExtra {
  body?: string;
  responseBody?: string;
  additionalBindings?: RuleInit[];
}

interface MethodSpec {
  rule?: RuleInit;
  clientStreaming?: boolean;
}

const { STRING, MESSAGE } = FieldDescriptorProto_Type;
const { OPTIONAL, REPEATED } = FieldDescriptorProto_Label;

/**
 * A service `test.v1.Svc` whose methods all take `test.v1.Req { string id; Inner inner;
 * repeated string tags; string other; }` and return `test.v1.Resp { string value; }`, with the
 * given rules.
 */
function serviceWith(methods: Record<string, MethodSpec>): DescService {
  const file = create(FileDescriptorProtoSchema, {
    name: "test/v1/svc.proto",
    package: "test.v1",
    syntax: "proto3",
    messageType: [
      {
        name: "Req",
        field: [
          { name: "id", number: 1, type: STRING, label: OPTIONAL, jsonName: "id" },
          {
            name: "inner",
            number: 2,
            type: MESSAGE,
            typeName: ".test.v1.Inner",
            label: OPTIONAL,
            jsonName: "inner",
          },
          { name: "tags", number: 3, type: STRING, label: REPEATED, jsonName: "tags" },
          { name: "other", number: 4, type: STRING, label: OPTIONAL, jsonName: "other" },
        ],
      },
      {
        name: "Inner",
        field: [{ name: "name", number: 1, type: STRING, label: OPTIONAL, jsonName: "name" }],
      },
      {
        name: "Resp",
        field: [{ name: "value", number: 1, type: STRING, label: OPTIONAL, jsonName: "value" }],
      },
    ],
    service: [
      {
        name: "Svc",
        method: Object.entries(methods).map(([name, spec]) => {
          const options = create(MethodOptionsSchema);
          if (spec.rule) setExtension(options, http, create(HttpRuleSchema, spec.rule));
          return {
            name,
            inputType: ".test.v1.Req",
            outputType: ".test.v1.Resp",
            clientStreaming: spec.clientStreaming ?? false,
            options,
          };
        }),
      },
    ],
  });
  return createFileRegistry(file, () => undefined).getService("test.v1.Svc")!;
}

function get(path: string, extra: RuleExtra = {}): MethodSpec {
  return { rule: { pattern: { case: "get", value: path }, ...extra } };
}

function methodOf(found: RouteLookup | undefined): string | undefined {
  return found?.kind === "match" ? found.route.method.name : undefined;
}

describe("createRouteTable on the transcoding test service", () => {
  const table = createRouteTable([TranscodingService]);

  it("has one route per binding, additional bindings included", () => {
    // 14 methods with one rule each, plus GetItem's additional binding.
    expect(table.routes).toHaveLength(15);
  });

  it("routes each binding to its method with raw captures", () => {
    expect(table.lookup("GET", "/v1/items/a%2Fb")).toMatchObject({ kind: "match", captures: ["a%2Fb"] });
    expect(methodOf(table.lookup("GET", "/v1/items/a"))).toBe("GetItem");
    expect(table.lookup("GET", "/v1/shelves/s/items/i")).toMatchObject({ captures: ["s", "i"] });
    expect(methodOf(table.lookup("GET", "/v1/shelves/s/items/i"))).toBe("GetItem");
    expect(methodOf(table.lookup("POST", "/v1/items/a:archive"))).toBe("ArchiveItem");
    expect(methodOf(table.lookup("REPORT", "/v1/items/a"))).toBe("ReportItem");
    expect(methodOf(table.lookup("GET", "/v1/kinds/1/items:count"))).toBe("CountItems");
    expect(methodOf(table.lookup("GET", "/v1/items:watch"))).toBe("WatchItems");
    expect(methodOf(table.lookup("GET", "/v1/items"))).toBe("ListItems");
    expect(methodOf(table.lookup("GET", "/v1/shelves/1/books/a/b"))).toBe("GetBook");
  });

  it("resolves body, response_body and path bindings", () => {
    const update = table.routes.find((r) => r.method.name === "UpdateItem")!;
    expect(update.body).toMatchObject({ kind: "field", field: { name: "item" } });
    expect(update.pathBindings[0]!.fields.map((f) => f.name)).toEqual(["item", "id"]);
    expect(table.routes.find((r) => r.method.name === "CreateItem")!.body).toEqual({ kind: "all" });
    expect(table.routes.find((r) => r.method.name === "GetItem")!.body).toEqual({ kind: "none" });
    expect(table.routes.find((r) => r.method.name === "ListItems")!.responseBody?.name).toBe("items");
  });

  it("reports the methods a path accepts when the HTTP method does not match", () => {
    expect(table.lookup("PUT", "/v1/items/a")).toEqual({
      kind: "method-not-allowed",
      allowed: ["DELETE", "GET", "PATCH", "REPORT"],
    });
  });

  it("answers undefined when no template matches the path", () => {
    expect(table.lookup("GET", "/v2/items")).toBeUndefined();
    expect(table.lookup("GET", "*")).toBeUndefined();
  });

  it("throws on a conflict: two bound copies of the same service", () => {
    expect(() => createRouteTable([TranscodingService, TranscodingService])).toThrow(
      /REST route conflict: GET \/v1\/items\/\{id\} .* match the same paths/,
    );
  });
});

describe("createRouteTable validation", () => {
  it("prefers the more specific template whatever the declaration order", () => {
    const table = createRouteTable([
      serviceWith({ ById: get("/v1/things/{id}"), Special: get("/v1/things/special") }),
    ]);
    expect(methodOf(table.lookup("GET", "/v1/things/special"))).toBe("Special");
    expect(methodOf(table.lookup("GET", "/v1/things/other"))).toBe("ById");
  });

  it("skips methods without an http option", () => {
    expect(createRouteTable([serviceWith({ Plain: {} })]).routes).toHaveLength(0);
  });

  it("throws on equivalent templates with different variable names", () => {
    const svc = serviceWith({ A: get("/v1/things/{id}"), B: get("/v1/things/{other=*}") });
    expect(() => createRouteTable([svc])).toThrow("REST route conflict");
  });

  it("accepts equivalent templates under different HTTP methods", () => {
    const svc = serviceWith({
      A: get("/v1/things/{id}"),
      B: { rule: { pattern: { case: "delete", value: "/v1/things/{id}" } } },
    });
    expect(createRouteTable([svc]).routes).toHaveLength(2);
  });

  it.each<[string, MethodSpec, string]>([
    [
      "an unknown body field",
      get("/v1/x", { body: "nope" }),
      'test.v1.Svc.M (GET /v1/x): body "nope" is not a field',
    ],
    [
      "an unknown response_body field",
      get("/v1/x", { responseBody: "nope" }),
      'response_body "nope" is not a field',
    ],
    ["a path variable naming no field", get("/v1/{nope}"), 'test.v1.Req has no field "nope"'],
    [
      "a path variable naming a message",
      get("/v1/{inner}"),
      'path variable "inner" must name a singular scalar',
    ],
    ["a path variable naming a list", get("/v1/{tags}"), 'path variable "tags" must name a singular scalar'],
    ["a path through a scalar", get("/v1/{id.x}"), '"id" is not a singular message field'],
    ["a path variable that is the body field", get("/v1/{id}", { body: "id" }), "is also the body field"],
    ["a malformed template", get("/v1/**/x"), "** must be the last segment"],
    [
      "a client-streaming method",
      { ...get("/v1/x"), clientStreaming: true },
      "client_streaming methods have no REST",
    ],
    [
      "nested additional bindings",
      get("/v1/x", {
        additionalBindings: [{ pattern: { case: "get", value: "/v1/y" }, additionalBindings: [{}] }],
      }),
      "additional_bindings must not nest",
    ],
    ["a rule without a pattern", { rule: { body: "*" } }, "has no pattern"],
  ])("throws on %s", (_, spec, message) => {
    expect(() => createRouteTable([serviceWith({ M: spec })])).toThrow(message);
  });

  it("accepts a path variable inside the body field and a nested scalar path", () => {
    const table = createRouteTable([
      serviceWith({ M: { rule: { pattern: { case: "patch", value: "/v1/{inner.name}" }, body: "inner" } } }),
    ]);
    expect(table.lookup("PATCH", "/v1/n")).toMatchObject({ kind: "match", captures: ["n"] });
  });
});
