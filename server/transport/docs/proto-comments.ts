import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The leading comments of the declarations in .proto files, by full name: `pkg.Message`,
 * `pkg.Message.field`, `pkg.Enum.VALUE`, `pkg.Service`, `pkg.Service.Method`. The generated code
 * carries no comments at run time, so the OpenAPI document reads them from the .proto sources,
 * which are the API's documentation. As protoc does, a comment counts only when it ends on the
 * line just above the declaration; text is without the `//` and one space after it.
 */
export type ProtoComments = ReadonlyMap<string, string>;

/** A scope opened by `{`: a declaration whose members are named under it, or any other block. */
interface Scope {
  readonly kind: "message" | "enum" | "service" | "oneof" | "block";
  /** The full name members are named under (a oneof's is its message's). */
  readonly name: string;
}

const SCOPE_OPENER = /^(message|enum|service)\s+(\w+)\s*\{/;
const ONEOF = /^oneof\s+\w+\s*\{/;
const RPC = /^rpc\s+(\w+)\s*\(/;
const FIELD = /^(?:(?:repeated|optional|required)\s+)?(?:map\s*<[^>]*>|[\w.]+)\s+(\w+)\s*=\s*\d+/;
const ENUM_VALUE = /^(\w+)\s*=\s*-?\d+/;
const STRING_LITERAL = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g;

/** Reads the comments of every .proto file under `dir` (recursively). */
export async function readProtoComments(dir: string): Promise<ProtoComments> {
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith(".proto")).sort();
  const comments = new Map<string, string>();
  for (const file of files) {
    for (const [name, text] of parseProtoComments(await readFile(join(dir, file), "utf8"))) {
      comments.set(name, text);
    }
  }
  return comments;
}

/** The comments of one .proto file's declarations. */
export function parseProtoComments(source: string): Map<string, string> {
  const comments = new Map<string, string>();
  const scopes: Scope[] = [];
  let pkg = "";
  let pending: string[] = [];
  const qualify = (name: string) => {
    const outer = scopes.findLast((s) => s.kind !== "block")?.name ?? pkg;
    return outer === "" ? name : `${outer}.${name}`;
  };

  for (const raw of source.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("//")) {
      pending.push(line.replace(/^\/\/ ?/, ""));
      continue;
    }
    const comment = pending.join("\n").trim();
    pending = [];
    const code = line
      .replace(STRING_LITERAL, '""')
      .replace(/\/\/.*$/, "")
      .trim();
    if (code === "") continue;
    const record = (name: string) => {
      if (comment !== "") comments.set(name, comment);
    };
    const inside = scopes.findLast((s) => s.kind !== "block");
    const declared = declarationOf(code, inside?.kind);
    let opened: Scope | undefined;
    if (declared?.kind === "package") {
      pkg = declared.name;
    } else if (declared?.kind === "message" || declared?.kind === "enum" || declared?.kind === "service") {
      const name = qualify(declared.name);
      record(name);
      opened = { kind: declared.kind, name };
    } else if (declared?.kind === "oneof" && inside) {
      opened = { kind: "oneof", name: inside.name };
    } else if (declared && inside) {
      record(`${inside.name}.${declared.name}`);
    }
    let opens = [...code].filter((c) => c === "{").length;
    if (opened) {
      scopes.push(opened);
      opens--;
    }
    for (; opens > 0; opens--) scopes.push({ kind: "block", name: "" });
    for (let closes = [...code].filter((c) => c === "}").length; closes > 0; closes--) scopes.pop();
  }
  return comments;
}

/** What a line of code declares, given the kind of the scope it is in. */
function declarationOf(
  code: string,
  inside: Scope["kind"] | undefined,
): { kind: "package" | "message" | "enum" | "service" | "oneof" | "member"; name: string } | undefined {
  const pkg = /^package\s+([\w.]+)\s*;/.exec(code);
  if (pkg) return { kind: "package", name: pkg[1]! };
  const scope = SCOPE_OPENER.exec(code);
  if (scope) return { kind: scope[1] as "message" | "enum" | "service", name: scope[2]! };
  if (ONEOF.test(code)) return { kind: "oneof", name: "" };
  const member =
    inside === "service"
      ? RPC.exec(code)
      : inside === "enum"
        ? ENUM_VALUE.exec(code)
        : inside === "message" || inside === "oneof"
          ? FIELD.exec(code)
          : null;
  return member ? { kind: "member", name: member[1]! } : undefined;
}
