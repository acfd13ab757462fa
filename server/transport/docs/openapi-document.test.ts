import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { InputShapesSchema } from "../../../test/gen/agentplane/testing/v1/input_shapes_pb.js";
import { TranscodingService } from "../../../test/gen/agentplane/testing/v1/transcoding_service_pb.js";
import { createSchemaCollector } from "./message-schema.js";
import { buildOpenApiDocument } from "./openapi-document.js";

type Doc = {
  paths: Record<
    string,
    Record<string, { parameters?: { name: string; in: string; description?: string }[] }>
  >;
  components: { schemas: Record<string, unknown> };
};

/**
 * The transcoder's test service has every binding shape: additional bindings, a multi-segment
 * variable, `body: "*"`, a body field, a custom verb, a custom HTTP method, `response_body` naming
 * a list, a scalar and a message, and streams.
 */
function testDocument(): Doc {
  return buildOpenApiDocument({
    services: [TranscodingService],
    publicServices: new Set(),
    adapterRoutes: [],
    version: "0.0.0",
    comments: new Map([["agentplane.testing.v1.Item.id", "The item's id."]]),
  }) as Doc;
}

describe("the OpenAPI document of every binding shape", () => {
  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(testDocument() as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("names path variables, multi-segment ones included, and lists custom methods beside", () => {
    const { paths } = testDocument();
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining([
        "/v1/items/{id}",
        "/v1/shelves/{shelf}/items/{id}",
        "/v1/{name}",
        "/v1/items/{item.id}",
        "/v1/items/{id}:archive",
        "/v1/kinds/{kind}/items:count",
      ]),
    );
    const book = paths["/v1/{name}"]!.get!.parameters!.find((p) => p.name === "name")!;
    expect(book.description).toContain("May contain `/`.");
    expect(Object.keys(paths["/v1/items/{id}"]!)).toEqual(
      expect.arrayContaining(["get", "delete", "x-additionalOperations"]),
    );
    expect(Object.keys(paths["/v1/items/{id}"]!["x-additionalOperations"]!)).toEqual(["REPORT"]);
  });

  it("takes query parameters from the request fields the path and body leave", () => {
    const { paths } = testDocument();
    const patch = paths["/v1/items/{item.id}"]!.patch!.parameters!.map((p) => `${p.in} ${p.name}`);
    expect(patch).toContain("path item.id");
    expect(patch.filter((p) => p.startsWith("query item"))).toEqual([]);
    expect(paths["/v1/items"]!.post!.parameters!.filter((p) => p.in === "query")).toEqual([]);
    const search = paths["/v1/search"]!.get!.parameters!.filter((p) => p.in === "query").map((p) => p.name);
    expect(search).toEqual(expect.arrayContaining(["offset", "created_after", "archived"]));
  });
});

describe("message schemas", () => {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const schemas = createSchemaCollector(new Map([["agentplane.testing.v1.InputShapes.text", "Some text."]]));
  const root = schemas.message(InputShapesSchema);
  ajv.addSchema({ $id: "doc", components: { schemas: schemas.components() } });
  const validate = ajv.compile({ $ref: `doc${String(root.$ref)}` });
  const json = (init: Parameters<typeof create<typeof InputShapesSchema>>[1]) =>
    toJson(InputShapesSchema, create(InputShapesSchema, init), {
      useProtoFieldName: true,
      alwaysEmitImplicit: true,
    });

  it("accept what protobuf-es writes, from an empty message to one with every kind of field set", () => {
    const child = create(InputShapesSchema, { text: "child", count: 3n });
    for (const value of [
      json({}),
      json({
        text: "t",
        texts: ["a", "b"],
        labels: { k: "v" },
        childrenByNumber: { 7: child },
        choice: { case: "chosenWrapped", value: { value: "w" } },
        wrapped: "x",
        wrappedList: [{ value: "y" }],
        score: 1.5,
        scores: [1, 2],
        wrappedScore: 2.5,
        data: { a: [1, { b: null }] },
        dataList: [{ c: true }],
        value: { kind: { case: "stringValue", value: "s" } },
        values: [{ kind: { case: "numberValue", value: 1 } }],
        list: { values: [{ kind: { case: "boolValue", value: false } }] },
        at: timestampFromDate(new Date("2026-03-01T00:00:00Z")),
        ats: [timestampFromDate(new Date(0))],
        child,
        raw: new Uint8Array([1, 2, 255]),
        count: 9_007_199_254_740_993n,
      }),
    ]) {
      expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it("refuse values of the wrong type", () => {
    for (const wrong of [
      { count: 1.5 },
      { texts: "not a list" },
      { labels: { k: 1 } },
      { at: 5 },
      { child: "x" },
      { score: "high" },
    ]) {
      expect(validate(wrong), JSON.stringify(wrong)).toBe(false);
    }
  });

  it("carry the field comments", () => {
    const component = schemas.components()["agentplane.testing.v1.InputShapes"] as {
      properties: Record<string, { description?: string }>;
    };
    expect(component.properties.text?.description).toBe("Some text.");
  });
});
