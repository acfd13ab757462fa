/**
 * The protoc plugin's work: a CodeGeneratorRequest in, a CodeGeneratorResponse out. Problems the
 * protos cause (a naming conflict) go into the response's `error`, which buf prints and fails on.
 */
import { create, createFileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CodeGeneratorRequestSchema,
  type CodeGeneratorResponse,
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { emitSdk } from "./sdk-emit.js";
import { SdkNamingError, selectSdk } from "./sdk-services.js";

/** The response to a request: the generated files, or the error that stopped generation. */
export function generate(request: Uint8Array): Uint8Array {
  const req = fromBinary(CodeGeneratorRequestSchema, request);
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: req.protoFile }));
  const files = req.fileToGenerate.map((name) => {
    const file = registry.getFile(name);
    if (!file) throw new Error(`the request names ${name} but holds no descriptor for it`);
    return file;
  });
  const supportedFeatures = BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL);
  let response: CodeGeneratorResponse;
  try {
    const file = emitSdk(selectSdk(files)).map((f) => ({ name: f.name, content: f.content }));
    response = create(CodeGeneratorResponseSchema, { supportedFeatures, file });
  } catch (error) {
    if (!(error instanceof SdkNamingError)) throw error;
    response = create(CodeGeneratorResponseSchema, { supportedFeatures, error: error.message });
  }
  return toBinary(CodeGeneratorResponseSchema, response);
}
