import type { DescMessage, DescService } from "@bufbuild/protobuf";
import type { AdapterRoute } from "../http-adapter.js";
import { stringConverter } from "../rest/field-value.js";
import { createRouteTable, type Route } from "../rest/route-table.js";
import { ADAPTER_OPERATIONS, type AdapterOperation, genericAdapterOperation } from "./adapter-operations.js";
import { createSchemaCollector, type JsonSchema, type SchemaCollector } from "./message-schema.js";
import type { ProtoComments } from "./proto-comments.js";

/**
 * The OpenAPI 3.1 document of the REST API, built from the same google.api.http descriptors the
 * REST transcoder serves (server/transport/rest/route-table.ts): one operation per binding, with
 * its path and query parameters, its JSON body and answer as schemas of the proto messages, SSE for
 * server-streaming RPCs, and `{"detail"}` for every error. The REST-only adapter routes are listed
 * too, described by adapter-operations.ts.
 */

/** Inputs of {@link buildOpenApiDocument}. */
export interface OpenApiSources {
  /** The services whose google.api.http bindings the REST transcoder serves. */
  readonly services: readonly DescService[];
  /** Services that answer without an API key (their operations need no security). */
  readonly publicServices: ReadonlySet<string>;
  /** The REST-only adapter routes, matched before the transcoder. */
  readonly adapterRoutes: readonly AdapterRoute[];
  /** agentplane's version. */
  readonly version: string;
  /** The .proto comments, which describe services, RPCs, messages and fields. */
  readonly comments: ProtoComments;
}

/** An OpenAPI operation object. */
type Operation = Record<string, unknown>;
/** An OpenAPI parameter object. */
type Parameter = { name: string; in: string; required?: boolean; schema: JsonSchema; [key: string]: unknown };
/** A reference to a parameter of the components. */
type ParameterRef = { $ref: string };

/** The HTTP methods an OpenAPI path item can hold. */
const OPENAPI_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);
/** Where a path item lists operations of methods OpenAPI 3.1 does not name. */
const ADDITIONAL_OPERATIONS = "x-additionalOperations";
/**
 * Nested message fields given as dotted query parameters (`a.b`) are listed this deep: request
 * messages nest filters one level; deeper names still work, they would only lengthen the list.
 */
const MAX_QUERY_DEPTH = 2;

/** Every operation's 4XX and 5XX answer: `{"detail"}`. */
const ERROR_REF = { $ref: "#/components/responses/Error" };
/** The `x-tenant-id` header, on every operation that needs a key. */
const TENANT_REF: ParameterRef = { $ref: "#/components/parameters/TenantId" };

/** Builds the document; throws when a route cannot be described (a bug to fix where it is declared). */
export function buildOpenApiDocument(sources: OpenApiSources): Record<string, unknown> {
  const { comments } = sources;
  const schemas = createSchemaCollector(comments);
  const paths = new Map<string, Record<string, Operation>>();
  const operationIds = new Set<string>();
  const rpcQueries = new Map<string, Parameter[]>();
  const tags = new Map<string, string>();

  const add = (method: string, path: string, operation: Operation) => {
    const verb = method.toLowerCase();
    const item = paths.get(path) ?? {};
    if (OPENAPI_METHODS.has(verb)) {
      item[verb] = operation;
    } else {
      // A `custom` google.api.http method (e.g. REPORT): OpenAPI 3.1 has no place for it; this
      // extension has the shape of 3.2's `additionalOperations`.
      item[ADDITIONAL_OPERATIONS] = { ...item[ADDITIONAL_OPERATIONS], [method]: operation };
    }
    paths.set(path, item);
  };

  for (const route of createRouteTable(sources.services).routes) {
    const { path, params } = openApiPath(route, schemas);
    const query = queryParameters(route, schemas);
    rpcQueries.set(`${route.httpMethod} ${route.template.text}`, query);
    const tag = serviceTag(route.service);
    tags.set(tag, comments.get(route.service.typeName) ?? `The RPCs of ${route.service.typeName}.`);
    const rpcComment = comments.get(`${route.service.typeName}.${route.method.name}`);
    const isPublic = sources.publicServices.has(route.service.typeName);
    const operation: Operation = {
      tags: [tag],
      operationId: uniqueId(operationIds, `${tag}.${route.method.name}`),
      summary: `${route.service.name}.${route.method.name}`,
      description: [
        ...(rpcComment ? [rpcComment] : []),
        `The RPC \`${route.service.typeName}/${route.method.name}\`, also served over gRPC, gRPC-Web and Connect.`,
      ].join("\n\n"),
      parameters: [...params, ...query, ...(isPublic ? [] : [TENANT_REF])],
      responses: { "200": successResponse(route, schemas), "4XX": ERROR_REF, "5XX": ERROR_REF },
    };
    const body = requestBody(route, schemas);
    if (body) operation.requestBody = body;
    if (isPublic) operation.security = [];
    add(route.httpMethod, path, operation);
  }

  for (const route of sources.adapterRoutes) {
    for (const method of route.methods) {
      // OpenAPI says a GET answers HEAD too; listing both would only repeat the route.
      if (method === "HEAD" && route.methods.includes("GET")) continue;
      const described =
        ADAPTER_OPERATIONS.get(`${method} ${route.path}`) ?? genericAdapterOperation(method, route.path);
      const operation = adapterOperation(method, route.path, described, rpcQueries, operationIds);
      if (!tags.has(described.tag)) tags.set(described.tag, "Routes that are not RPCs.");
      add(method, route.path, operation);
    }
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "agentplane",
      version: sources.version,
      description:
        "The REST form of agentplane's API. Every RPC is also served over gRPC, gRPC-Web and Connect on the " +
        'same port. JSON uses proto field names. Errors answer `{"detail": ...}` with the HTTP status ' +
        "saying what kind (400 bad JSON, 401, 403, 404, 409, 422 invalid argument, 429, 500, 503).",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    tags: [...tags]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, description]) => ({ name, description })),
    paths: Object.fromEntries([...paths].sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: {
        ...schemas.components(),
        ErrorDetail: {
          type: "object",
          properties: { detail: { type: "string", description: "What went wrong and what to fix." } },
          required: ["detail"],
        },
      },
      responses: {
        Error: {
          description: "The request was refused or failed; `detail` says why.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorDetail" } } },
        },
      },
      parameters: {
        TenantId: {
          name: "x-tenant-id",
          in: "header",
          required: false,
          description: "The workspace to act in; a personal key falls back to its default workspace.",
          schema: { type: "string", format: "uuid" },
        },
      },
      securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
    },
    security: [{ ApiKey: [] }],
  };
}

/** `agentplane.iam.v1.WorkspaceService` → `iam.v1.WorkspaceService` (two RunServices exist). */
function serviceTag(service: DescService): string {
  return service.typeName.replace(/^agentplane\./, "");
}

function uniqueId(seen: Set<string>, base: string): string {
  let id = base;
  for (let n = 2; seen.has(id); n++) id = `${base}${n}`;
  seen.add(id);
  return id;
}

/**
 * The template as an OpenAPI path: `{var=...}` becomes `{var}` (a multi-segment value is said to
 * hold `/`), and a wildcard outside any variable becomes a parameter of its own.
 */
function openApiPath(route: Route, schemas: SchemaCollector): { path: string; params: Parameter[] } {
  const params: Parameter[] = [];
  let wildcards = 0;
  const byName = new Map(route.pathBindings.map((b) => [b.variable.fieldPath, b]));
  const path = route.template.text
    .replace(/\{([^}=]+)(=[^}]*)?\}/g, (_all, name: string) => {
      const binding = byName.get(name)!;
      const leaf = binding.fields[binding.fields.length - 1]!;
      const notes = [schemas.describe(leaf), binding.variable.multiSegment ? "May contain `/`." : undefined];
      const description = notes.filter((n) => n !== undefined).join(" ");
      // Only scalars and enums may be bound to a path (route-table.ts).
      params.push({
        name,
        in: "path",
        required: true,
        schema: schemas.element(leaf),
        ...(description === "" ? {} : { description }),
      });
      return `{${name}}`;
    })
    .replace(/(?<=\/)\*\*?(?=\/|:|$)/g, () => {
      const name = `wildcard_${++wildcards}`;
      params.push({ name, in: "path", required: true, schema: { type: "string" } });
      return `{${name}}`;
    });
  return { path, params };
}

/**
 * The query parameters of a route: every field of the request not taken from the path or the body
 * that a URL string can set (repeated ones by repeating the parameter), and the fields of nested
 * messages by dotted name. A route whose body is `*` takes none.
 */
function queryParameters(route: Route, schemas: SchemaCollector): Parameter[] {
  if (route.body.kind === "all") return [];
  const bodyField = route.body.kind === "field" ? route.body.field : undefined;
  const bound = new Set(route.pathBindings.map((b) => b.fields.map((f) => f.name).join(".")));
  const params: Parameter[] = [];
  const visit = (message: DescMessage, prefix: string, depth: number, seen: ReadonlySet<string>) => {
    for (const field of message.fields) {
      const name = `${prefix}${field.name}`;
      if (field === bodyField || bound.has(name)) continue;
      if (stringConverter(field)) {
        // The comment goes on the parameter, not twice (on its schema too).
        const { description, ...schema } = schemas.field(field);
        params.push({
          name,
          in: "query",
          schema,
          ...(description === undefined ? {} : { description }),
          ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}),
        });
      } else if (
        field.fieldKind === "message" &&
        depth < MAX_QUERY_DEPTH &&
        !seen.has(field.message.typeName)
      ) {
        visit(field.message, `${name}.`, depth + 1, new Set([...seen, field.message.typeName]));
      }
    }
  };
  visit(route.method.input, "", 1, new Set([route.method.input.typeName]));
  return params;
}

function requestBody(route: Route, schemas: SchemaCollector): Record<string, unknown> | undefined {
  if (route.body.kind === "none") return undefined;
  const schema =
    route.body.kind === "all" ? schemas.message(route.method.input) : schemas.field(route.body.field);
  return { required: false, content: { "application/json": { schema } } };
}

function successResponse(route: Route, schemas: SchemaCollector): Record<string, unknown> {
  const output = route.method.output;
  if (route.method.methodKind === "server_streaming") {
    const data =
      output.typeName === "agentplane.api.v1.ServerSentEvent"
        ? "each event's `event:` names it and `data:` holds its JSON"
        : `each event is \`event: message\` with a \`${output.typeName}\` as JSON in \`data:\` (${refName(schemas.message(output))})`;
    return {
      description: `Server-Sent Events: ${data}; \`: heartbeat\` comments keep an idle stream open.`,
      content: { "text/event-stream": { schema: { type: "string" } } },
    };
  }
  const schema = route.responseBody ? schemas.field(route.responseBody) : schemas.message(output);
  return {
    description: "Success (a 2xx; some RPCs answer 202 when the work continues after the answer).",
    content: { "application/json": { schema } },
  };
}

function refName(schema: JsonSchema): string {
  const ref = schema.$ref;
  return typeof ref === "string" ? `schema \`${ref.slice(ref.lastIndexOf("/") + 1)}\`` : "see its schema";
}

function adapterOperation(
  method: string,
  path: string,
  described: AdapterOperation,
  rpcQueries: ReadonlyMap<string, Parameter[]>,
  operationIds: Set<string>,
): Operation {
  const params: (Parameter | ParameterRef)[] = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
    name: m[1]!,
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  if (described.queryLike) {
    const query = rpcQueries.get(described.queryLike);
    if (!query)
      throw new Error(`${method} ${path}: no RPC route ${described.queryLike} to take query parameters from`);
    params.push(...query);
  }
  if (described.authenticated) params.push(TENANT_REF);
  const responses: Record<string, unknown> = { "4XX": ERROR_REF, "5XX": ERROR_REF };
  if (described.success) {
    responses[described.success.status] = {
      description: "Success.",
      content: Object.fromEntries(
        Object.entries(described.success.content).map(([type, schema]) => [type, { schema }]),
      ),
    };
  } else {
    responses.default = { description: "See the documents in docs/." };
  }
  const operation: Operation = {
    tags: [described.tag],
    operationId: uniqueId(operationIds, `${method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, "_")}`),
    summary: described.summary,
    ...(described.description ? { description: described.description } : {}),
    ...(params.length > 0 ? { parameters: params } : {}),
    responses,
  };
  if (described.requestBody) {
    operation.requestBody = {
      required: true,
      content: Object.fromEntries(
        Object.entries(described.requestBody).map(([type, schema]) => [type, { schema }]),
      ),
    };
  }
  if (described.authenticated === false) operation.security = [];
  return operation;
}
