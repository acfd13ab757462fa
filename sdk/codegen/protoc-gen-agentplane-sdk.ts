/**
 * protoc-gen-agentplane-sdk: the protoc plugin (run by `buf generate`, see buf.gen.yaml) that writes
 * the SDK's service table and package namespaces into gen/sdk/ from the protos, so that every
 * service has a typed client the day its proto lands (design.md, decision 15). It reads a
 * CodeGeneratorRequest on stdin and writes the CodeGeneratorResponse on stdout.
 */
import { generate } from "./sdk-plugin.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
process.stdout.write(generate(Buffer.concat(chunks)));
