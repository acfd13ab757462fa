import { create, createFileRegistry, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  CodeGeneratorRequestSchema,
  CodeGeneratorResponseSchema,
  type DescriptorProtoSchema,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
  file_google_protobuf_struct,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { generate } from "./sdk-plugin.js";
import { clientName, domainOf, namespaceOf, SdkNamingError, selectSdk } from "./sdk-services.js";

type MessageInit = MessageInitShape<typeof DescriptorProtoSchema>;

/** A message of one field per entry: `[name, type name (".pkg.Msg") or "string", repeated?]`. */
function message(name: string, fields: [string, string, boolean?][]): MessageInit {
  return {
    name,
    field: fields.map(([field, type, repeated], i) => ({
      name: field,
      number: i + 1,
      label: repeated ? FieldDescriptorProto_Label.REPEATED : FieldDescriptorProto_Label.OPTIONAL,
      ...(type === "string"
        ? { type: FieldDescriptorProto_Type.STRING }
        : { type: FieldDescriptorProto_Type.MESSAGE, typeName: type }),
    })),
  };
}

/** A proto3 file of `pkg` with `services`, each with one RPC from `input` to `output`. */
function file(
  pkg: string,
  services: string[],
  messages: MessageInit[] = [message("Req", []), message("Res", [])],
  io: [string, string] = [`.${pkg}.Req`, `.${pkg}.Res`],
): FileDescriptorProto {
  return create(FileDescriptorProtoSchema, {
    name: `${pkg.replaceAll(".", "/")}/f.proto`,
    package: pkg,
    syntax: "proto3",
    dependency: ["google/protobuf/struct.proto"],
    messageType: messages,
    service: services.map((name) => ({
      name,
      method: [{ name: "Call", inputType: io[0], outputType: io[1] }],
    })),
  });
}

/** The generated files of `protos`, as buf would hand them to the plugin. */
function filesOf(protos: FileDescriptorProto[]) {
  const registry = createFileRegistry(
    create(FileDescriptorSetSchema, { file: [file_google_protobuf_struct.proto, ...protos] }),
  );
  return protos.map((p) => registry.getFile(p.name)!);
}

describe("names", () => {
  it("names a client after its service: plural of the last word, unless it names one thing", () => {
    const names = [
      ["RunService", "runs"],
      ["ApiKeyService", "apiKeys"],
      ["BulkExportService", "bulkExports"],
      ["RunStatsService", "runStats"],
      ["StoreService", "store"],
      ["FeedbackService", "feedback"],
      ["UsageService", "usage"],
      ["IdentityService", "identity"],
      ["SystemService", "system"],
      ["TraceService", "traces"],
      ["ThreadStreamService", "threadStreams"],
      ["PolicyService", "policies"],
      ["InboxService", "inboxes"],
      ["Health", "healths"],
    ];
    expect(names.map(([service]) => [service, clientName(service!)])).toEqual(names);
  });

  it("names a domain after the package, its version appended unless v1; a namespace always has it", () => {
    expect(domainOf("agentplane.agents.v1")).toBe("agents");
    expect(domainOf("agentplane.tracing.v2")).toBe("tracingV2");
    expect(domainOf("agentplane.agents.protocol.v1")).toBe("agentsProtocol");
    expect(domainOf("agentplane.bulk_export.v1beta1")).toBe("bulkExportV1beta1");
    expect(namespaceOf("agentplane.agents.v1")).toBe("agentsV1");
    expect(namespaceOf("agentplane.api.v1")).toBe("apiV1");
    expect(namespaceOf("opentelemetry.proto.collector.trace.v1")).toBe("opentelemetryProtoCollectorTraceV1");
  });
});

describe("selection", () => {
  it("takes every service of our packages and only the served ones of vendored packages", () => {
    const selection = selectSdk(
      filesOf([
        file("agentplane.agents.v1", ["RunService", "ThreadStreamService"]),
        file("agentplane.tracing.v1", ["RunService"]),
        file("agentplane.api.v1", []),
        file("opentelemetry.proto.collector.trace.v1", ["TraceService"]),
        file("opentelemetry.proto.collector.metrics.v1", ["MetricsService"]),
        file("grpc.health.v1", ["Health"]),
        file("google.api", []),
      ]),
    );
    expect(selection.services.map((s) => `${s.domain}.${s.name} ${s.desc.typeName}`)).toEqual([
      "agents.runs agentplane.agents.v1.RunService",
      "agents.threadStreams agentplane.agents.v1.ThreadStreamService",
      "otlp.traces opentelemetry.proto.collector.trace.v1.TraceService",
      "tracing.runs agentplane.tracing.v1.RunService",
    ]);
    expect(selection.packages.map((p) => `${p.namespace} ${p.name}`)).toEqual([
      "agentsV1 agentplane.agents.v1",
      "apiV1 agentplane.api.v1",
      "tracingV1 agentplane.tracing.v1",
      "opentelemetryProtoCollectorTraceV1 opentelemetry.proto.collector.trace.v1",
    ]);
  });

  it("refuses two services that would be one client, and a domain the client object reserves", () => {
    expect(() => selectSdk(filesOf([file("agentplane.agents.v1", ["RunService", "RunsService"])]))).toThrow(
      new SdkNamingError(
        "agentplane.agents.v1.RunService and agentplane.agents.v1.RunsService would both be the client agents.runs",
      ),
    );
    expect(() => selectSdk(filesOf([file("agentplane.transport.v1", ["PipeService"])]))).toThrow(
      /client domain "transport" is reserved/,
    );
  });

  it("lists the messages that hold Value or ListValue fields, through nesting and recursion", () => {
    const pkg = "agentplane.test.v1";
    const selection = selectSdk(
      filesOf([
        file(
          pkg,
          ["JsonService"],
          [
            message("Req", [
              ["holder", `.${pkg}.Holder`],
              ["tree", `.${pkg}.TreeA`],
              ["plain", `.${pkg}.Plain`],
            ]),
            message("Holder", [["value", ".google.protobuf.Value"]]),
            // TreeA → TreeB → TreeA: a cycle in which only TreeB holds JSON.
            message("TreeA", [["b", `.${pkg}.TreeB`]]),
            message("TreeB", [
              ["a", `.${pkg}.TreeA`],
              ["list", ".google.protobuf.ListValue", true],
            ]),
            message("Plain", [["s", "string"]]),
            message("Res", [["meta", ".google.protobuf.Struct"]]),
          ],
        ),
      ]),
    );
    expect(selection.jsonMessages).toEqual([`${pkg}.Holder`, `${pkg}.Req`, `${pkg}.TreeA`, `${pkg}.TreeB`]);
    expect(selection.structMessages).toEqual([`${pkg}.Res`]);
  });
});

describe("the plugin", () => {
  const request = (protos: FileDescriptorProto[]) =>
    toBinary(
      CodeGeneratorRequestSchema,
      create(CodeGeneratorRequestSchema, {
        fileToGenerate: protos.map((p) => p.name),
        protoFile: [file_google_protobuf_struct.proto, ...protos],
      }),
    );

  it("writes the table, the namespaces and one module per package", () => {
    const response = fromBinary(
      CodeGeneratorResponseSchema,
      generate(request([file("agentplane.agents.v1", ["RunService"])])),
    );
    expect(response.error).toBe("");
    expect(response.file.map((f) => f.name)).toEqual([
      "sdk/agentplane/agents/v1/index.ts",
      "sdk/packages.ts",
      "sdk/services.ts",
    ]);
    const [pkg, packages, table] = response.file.map((f) => f.content ?? "");
    expect(pkg).toContain('export * from "../../../../agentplane/agents/v1/f_pb.js";');
    expect(packages).toContain('export * as agentsV1 from "./agentplane/agents/v1/index.js";');
    expect(table).toContain("    runs: agentsV1.RunService,");
  });

  it("answers a naming conflict as the response's error, which buf reports", () => {
    const response = fromBinary(
      CodeGeneratorResponseSchema,
      generate(request([file("agentplane.agents.v1", ["RunService", "RunsService"])])),
    );
    expect(response.error).toMatch(/would both be the client agents\.runs/);
    expect(response.file).toEqual([]);
  });
});
