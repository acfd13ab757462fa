import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  type EnumDescriptorProto,
  type FileDescriptorProto,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { parseProtoComments, readProtoComments } from "./proto-comments.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * Every leading comment protoc's own parser (through `buf build`, source info kept) attaches to a
 * declaration of proto/agentplane, by the same full names the reader uses. Field numbers of
 * descriptor.proto: file message_type 4, enum_type 5, service 6; message field 2, nested_type 3,
 * enum_type 4; enum value 2; service method 2.
 */
async function commentsFromBuf(): Promise<Map<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), "agentplane-buf-"));
  try {
    const image = join(dir, "image.binpb");
    await promisify(execFile)(join(ROOT, "node_modules", ".bin", "buf"), ["build", "proto", "-o", image], {
      cwd: ROOT,
    });
    const set = fromBinary(FileDescriptorSetSchema, await readFile(image));
    const found = new Map<string, string>();
    for (const file of set.file.filter((f) => f.name.startsWith("agentplane/"))) collectFile(file, found);
    return found;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function collectFile(file: FileDescriptorProto, found: Map<string, string>): void {
  const byPath = new Map<string, string>();
  for (const location of file.sourceCodeInfo?.location ?? []) {
    if (location.leadingComments !== undefined && location.leadingComments.trim() !== "") {
      byPath.set(location.path.join("."), normalize(location.leadingComments));
    }
  }
  const note = (name: string, path: number[]) => {
    const text = byPath.get(path.join("."));
    if (text !== undefined) found.set(name, text);
  };
  const message = (m: DescriptorProto, prefix: string, path: number[]) => {
    const name = `${prefix}.${m.name}`;
    note(name, path);
    for (const [i, f] of m.field.entries()) note(`${name}.${f.name}`, [...path, 2, i]);
    for (const [i, n] of m.nestedType.entries()) message(n, name, [...path, 3, i]);
    for (const [i, e] of m.enumType.entries()) enumType(e, name, [...path, 4, i]);
  };
  const enumType = (e: EnumDescriptorProto, prefix: string, path: number[]) => {
    const name = `${prefix}.${e.name}`;
    note(name, path);
    for (const [i, v] of e.value.entries()) note(`${name}.${v.name}`, [...path, 2, i]);
  };
  for (const [i, m] of file.messageType.entries()) message(m, file.package, [4, i]);
  for (const [i, e] of file.enumType.entries()) enumType(e, file.package, [5, i]);
  for (const [i, s] of file.service.entries()) {
    note(`${file.package}.${s.name}`, [6, i]);
    for (const [j, m] of s.method.entries()) note(`${file.package}.${s.name}.${m.name}`, [6, i, 2, j]);
  }
}

/** protoc keeps the space after `//` and the line ends; the reader drops one space per line and trims. */
function normalize(text: string): string {
  return text
    .split("\n")
    .map((line) => line.replace(/^ /, ""))
    .join("\n")
    .trim();
}

describe("proto comments", () => {
  it("are exactly the leading comments protoc attaches, for every declaration of proto/agentplane", async () => {
    const ours = await readProtoComments(join(ROOT, "proto", "agentplane"));
    const theirs = await commentsFromBuf();
    expect(theirs.size).toBeGreaterThan(100);
    expect(Object.fromEntries([...ours].sort())).toEqual(Object.fromEntries([...theirs].sort()));
  }, 60_000);

  it("skips comments a blank line detaches, string braces and one-line option blocks", () => {
    const comments = parseProtoComments(`syntax = "proto3";
package p.v1;

// Detached.

service S {
  // Lists.
  rpc List(ListRequest) returns (ListResponse) {
    option (google.api.http) = {get: "/things/{id}"};
  }
  rpc Bare(A) returns (B);
}

// A thing.
message Thing {
  // Its id.
  string id = 1; // trailing, ignored
  oneof kind {
    // A number.
    int32 n = 2;
  }
  map<string, Thing> children = 3;
  // Inner.
  message Inner {
    // Deep.
    repeated p.v1.Thing things = 1;
  }
  // After the nested message.
  bool done = 4;
}

enum Colour {
  // Unset.
  COLOUR_UNSPECIFIED = 0;
}
`);
    expect(Object.fromEntries(comments)).toEqual({
      "p.v1.S.List": "Lists.",
      "p.v1.Thing": "A thing.",
      "p.v1.Thing.id": "Its id.",
      "p.v1.Thing.n": "A number.",
      "p.v1.Thing.Inner": "Inner.",
      "p.v1.Thing.Inner.things": "Deep.",
      "p.v1.Thing.done": "After the nested message.",
      "p.v1.Colour.COLOUR_UNSPECIFIED": "Unset.",
    });
  });
});
