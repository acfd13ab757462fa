import {
  type DescEnum,
  type DescExtension,
  type DescFile,
  type DescMessage,
  type DescService,
  toBinary,
} from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  file_google_protobuf_any,
  file_google_protobuf_api,
  file_google_protobuf_descriptor,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_source_context,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_type,
  file_google_protobuf_wrappers,
} from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/**
 * The well-known types always resolve, as they do on grpc-go servers, even when no served file imports
 * them: clients look them up to decode `google.protobuf.Any` in error details.
 */
const WELL_KNOWN_FILES: readonly DescFile[] = [
  file_google_protobuf_any,
  file_google_protobuf_api,
  file_google_protobuf_descriptor,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_source_context,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_type,
  file_google_protobuf_wrappers,
];

/**
 * The given files and everything they import, transitively, each once (by `.proto` file name),
 * dependencies before the files that import them.
 */
export function collectFiles(roots: Iterable<DescFile>): DescFile[] {
  const seen = new Set<string>();
  const out: DescFile[] = [];
  const visit = (file: DescFile): void => {
    if (seen.has(file.proto.name)) return;
    seen.add(file.proto.name);
    for (const dependency of file.dependencies) visit(dependency);
    out.push(file);
  };
  for (const file of roots) visit(file);
  return out;
}

/** What the reflection answers are computed from; built once at start-up. */
interface ReflectionIndex {
  readonly serviceNames: readonly string[];
  readonly files: ReadonlyMap<string, DescFile>;
  readonly symbols: ReadonlyMap<string, DescFile>;
  /** Extendee type name → extension field number → the file declaring the extension. */
  readonly extensions: ReadonlyMap<string, ReadonlyMap<number, DescFile>>;
  readonly encoded: ReadonlyMap<DescFile, Uint8Array>;
}

function buildIndex(services: readonly DescService[]): ReflectionIndex {
  const reflectionServices = [v1.ServerReflection, v1alpha.ServerReflection];
  const files = collectFiles([
    ...WELL_KNOWN_FILES,
    ...[...services, ...reflectionServices].map((s) => s.file),
  ]);
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  const addSymbol = (name: string, file: DescFile) => {
    if (!symbols.has(name)) symbols.set(name, file);
  };
  const addEnum = (desc: DescEnum, scope: string) => {
    addSymbol(desc.typeName, desc.file);
    for (const value of desc.values) {
      // protoc scopes enum values beside their enum (C++ rules); `pkg.Enum.VALUE` is accepted too.
      addSymbol(qualify(scope, value.name), desc.file);
      addSymbol(`${desc.typeName}.${value.name}`, desc.file);
    }
  };
  const addMessage = (desc: DescMessage) => {
    addSymbol(desc.typeName, desc.file);
    for (const member of desc.members) addSymbol(`${desc.typeName}.${member.name}`, desc.file);
    for (const nested of desc.nestedMessages) addMessage(nested);
    for (const nested of desc.nestedEnums) addEnum(nested, desc.typeName);
  };
  for (const file of files) {
    for (const message of file.messages) addMessage(message);
    for (const desc of file.enums) addEnum(desc, file.proto.package);
    for (const service of file.services) {
      addSymbol(service.typeName, file);
      for (const method of service.methods) addSymbol(`${service.typeName}.${method.name}`, file);
    }
    for (const extension of nestedExtensions(file)) {
      addSymbol(extension.typeName, file);
      const byNumber = extensions.get(extension.extendee.typeName) ?? new Map<number, DescFile>();
      extensions.set(extension.extendee.typeName, byNumber);
      byNumber.set(extension.number, file);
    }
  }
  return {
    serviceNames: [...services, ...reflectionServices].map((s) => s.typeName),
    files: new Map(files.map((file) => [file.proto.name, file])),
    symbols,
    extensions,
    encoded: new Map(files.map((file) => [file, toBinary(FileDescriptorProtoSchema, file.proto)])),
  };
}

function qualify(scope: string, name: string): string {
  return scope === "" ? name : `${scope}.${name}`;
}

function* nestedExtensions(file: DescFile): Generator<DescExtension> {
  yield* file.extensions;
  const walk = function* (message: DescMessage): Generator<DescExtension> {
    yield* message.nestedExtensions;
    for (const nested of message.nestedMessages) yield* walk(nested);
  };
  for (const message of file.messages) yield* walk(message);
}

/** The request fields reflection reads; v1 and v1alpha requests both have this shape. */
interface ReflectionRequest {
  readonly host: string;
  readonly messageRequest:
    | {
        case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices";
        value: string;
      }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The answer to one request, in the shape shared by v1 and v1alpha responses. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

function answer(index: ReflectionIndex, request: ReflectionRequest, sent: Set<DescFile>): ReflectionAnswer {
  const r = request.messageRequest;
  switch (r.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return fileAnswer(index, index.files.get(r.value), sent, `file "${r.value}"`);
    case "fileContainingSymbol":
      return fileAnswer(index, index.symbols.get(r.value), sent, `symbol "${r.value}"`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = r.value;
      const file = index.extensions.get(containingType)?.get(extensionNumber);
      return fileAnswer(index, file, sent, `extension ${extensionNumber} of "${containingType}"`);
    }
    case "allExtensionNumbersOfType": {
      if (!index.symbols.has(r.value)) return notFound(`type "${r.value}"`);
      const numbers = [...(index.extensions.get(r.value)?.keys() ?? [])];
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: r.value, extensionNumber: numbers },
      };
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "message_request is not set" },
      };
  }
}

/**
 * The file followed by its transitive dependencies, leaving out files already sent on this stream
 * (clients cache them, as grpc-go's server assumes); the requested file itself is always sent.
 */
function fileAnswer(
  index: ReflectionIndex,
  file: DescFile | undefined,
  sent: Set<DescFile>,
  what: string,
): ReflectionAnswer {
  if (!file) return notFound(what);
  const out: Uint8Array[] = [];
  const visit = (f: DescFile, requested: boolean) => {
    if (sent.has(f) && !requested) return;
    sent.add(f);
    out.push(index.encoded.get(f) ?? toBinary(FileDescriptorProtoSchema, f.proto));
    for (const dependency of f.dependencies) visit(dependency, false);
  };
  visit(file, true);
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function notFound(what: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } };
}

function createReflectionImpl<Request extends ReflectionRequest>(index: ReflectionIndex) {
  return {
    async *serverReflectionInfo(requests: AsyncIterable<Request>) {
      const sent = new Set<DescFile>();
      for await (const request of requests) {
        yield {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer(index, request, sent),
        };
      }
    },
  };
}

/**
 * Registers gRPC server reflection, v1 and v1alpha, on `router`. It lists `services` and both
 * reflection services, and answers file, symbol (message, field, oneof, enum, enum value, service,
 * method, extension) and extension queries from the files of those services, their transitive
 * imports and the well-known types. Unknown names get a NOT_FOUND error response on the stream,
 * which stays open.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const index = buildIndex(services);
  router.service(v1.ServerReflection, createReflectionImpl<v1.ServerReflectionRequest>(index));
  router.service(v1alpha.ServerReflection, createReflectionImpl<v1alpha.ServerReflectionRequest>(index));
}
