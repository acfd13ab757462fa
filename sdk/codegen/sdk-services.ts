/**
 * Which services the SDK has a client for, and their names: the rules `npm run generate` applies
 * to the descriptors (sdk/README.md, "Clients", documents them for users).
 *
 * - Every service of a proto package we own (`agentplane.*`) gets a client, the day its proto lands.
 *   Vendored packages (`google.*`, `grpc.*`, `opentelemetry.*`, ...) get one only when the server
 *   serves them as an API: those are listed in {@link SERVED_VENDORED_SERVICES}. gRPC health and
 *   reflection are infrastructure (load balancers, `buf curl`), not listed.
 * - A client is `<domain>.<name>`. The domain is the package without `agentplane.` and without its
 *   version, in lowerCamelCase, with the version appended when it is not `v1`: `agentplane.agents.v1`
 *   is `agents`, `agentplane.tracing.v2` is `tracingV2`. The name is the service's name without
 *   `Service`, in lowerCamelCase, its last word in the plural unless it names one thing
 *   ({@link SINGULAR_WORDS}): `RunService` is `runs`, `ApiKeyService` `apiKeys`, `StoreService`
 *   `store`. So the three RunServices are `agents.runs`, `tracing.runs` and `tracingV2.runs`.
 * - Every package with a client, and every other `agentplane.*` package, is also exported as one
 *   namespace of its messages, enums and descriptors: the package in lowerCamelCase with its version
 *   (`agentsV1`, `tracingV2`, `apiV1`).
 */
import type { DescFile, DescMessage, DescService } from "@bufbuild/protobuf";

/** Our own proto packages: every service in them is an agentplane API. */
const OWN_PACKAGE = "agentplane";

/**
 * Services of vendored packages that the server serves as APIs, with the domain of their client.
 * OTLP's trace collector is served on the same port (design.md, decision 16): `otlp.traces`.
 */
export const SERVED_VENDORED_SERVICES: Readonly<Record<string, string>> = {
  "opentelemetry.proto.collector.trace.v1.TraceService": "otlp",
};

/**
 * Last words of service names that stay singular: each names one thing or a mass noun, not a
 * collection of resources (`StoreService` is the store, `UsageService` is usage).
 */
export const SINGULAR_WORDS: ReadonlySet<string> = new Set([
  "Store",
  "Feedback",
  "Usage",
  "Identity",
  "System",
]);

/**
 * Names the client object has besides its domains: a package whose domain would be one of them is
 * refused at generation time rather than shadowing it.
 */
export const RESERVED_DOMAINS: ReadonlySet<string> = new Set(["transport"]);

/** A service the SDK has a client for. */
export interface SdkService {
  readonly desc: DescService;
  /** The client's domain, such as `tracingV2`. */
  readonly domain: string;
  /** The client's name in its domain, such as `runs`. */
  readonly name: string;
  /** The namespace its package is exported as, such as `tracingV2`. */
  readonly namespace: string;
}

/** A proto package the SDK exports as a namespace. */
export interface SdkPackage {
  /** The proto package, such as `agentplane.tracing.v2`. */
  readonly name: string;
  /** The exported namespace, such as `tracingV2`. */
  readonly namespace: string;
  /** Its files, in name order. */
  readonly files: readonly DescFile[];
}

/** What the SDK is generated from. */
export interface SdkSelection {
  readonly services: readonly SdkService[];
  readonly packages: readonly SdkPackage[];
  /**
   * Type names of the messages that hold plain JSON (a `google.protobuf.Value` or `ListValue` field,
   * directly or in a nested message), reachable from the services' requests and responses.
   */
  readonly jsonMessages: readonly string[];
  /**
   * Type names of the messages, reachable from the services, that hold a `google.protobuf.Struct`
   * field (directly or nested) and are not among {@link jsonMessages}: protobuf-es already types
   * their Struct fields as plain objects, and the SDK only normalises what callers send there.
   */
  readonly structMessages: readonly string[];
}

/** Thrown when the protos break a naming rule (two clients with one name, a reserved domain). */
export class SdkNamingError extends Error {
  override readonly name = "SdkNamingError";
}

/** Selects and names the SDK's services and packages among `files` (the files buf generates). */
export function selectSdk(files: readonly DescFile[]): SdkSelection {
  const services: SdkService[] = [];
  const packages = new Map<string, DescFile[]>();
  for (const file of [...files].sort((a, b) => byText(a.name, b.name))) {
    const own = isOwnPackage(file.proto.package);
    const served = file.services.filter((s) => own || s.typeName in SERVED_VENDORED_SERVICES);
    if (!own && served.length === 0) continue;
    const list = packages.get(file.proto.package) ?? [];
    list.push(file);
    packages.set(file.proto.package, list);
    for (const desc of served)
      services.push({
        desc,
        domain: SERVED_VENDORED_SERVICES[desc.typeName] ?? domainOf(file.proto.package),
        name: clientName(desc.name),
        namespace: namespaceOf(file.proto.package),
      });
  }
  const seen = new Map<string, string>();
  for (const s of services) {
    if (RESERVED_DOMAINS.has(s.domain))
      throw new SdkNamingError(`${s.desc.typeName}: its client domain "${s.domain}" is reserved`);
    const path = `${s.domain}.${s.name}`;
    const other = seen.get(path);
    if (other) throw new SdkNamingError(`${other} and ${s.desc.typeName} would both be the client ${path}`);
    seen.set(path, s.desc.typeName);
  }
  services.sort((a, b) => byText(`${a.domain}.${a.name}`, `${b.domain}.${b.name}`));
  const descs = services.map((s) => s.desc);
  const jsonMessages = new Set(holdersOf(descs, JSON_TYPES));
  return {
    services,
    packages: [...packages]
      .map(([name, list]) => ({ name, namespace: namespaceOf(name), files: list }))
      .sort((a, b) => byText(a.name, b.name)),
    jsonMessages: holdersOf(descs, JSON_TYPES),
    structMessages: holdersOf(descs, STRUCT_TYPES).filter((m) => !jsonMessages.has(m)),
  };
}

/** Code-unit order: the same on every machine, whatever its locale, so the output never churns. */
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isOwnPackage(pkg: string): boolean {
  return pkg === OWN_PACKAGE || pkg.startsWith(`${OWN_PACKAGE}.`);
}

/** A version segment of a package: `v1`, `v2`, `v1beta1`, `v2alpha`. */
const VERSION = /^v\d+(?:(?:alpha|beta)\d*)?$/;

/** The package's segments without our prefix, and its version (undefined when it has none). */
function packageParts(pkg: string): { words: string[]; version: string | undefined } {
  const segments = pkg.split(".");
  if (isOwnPackage(pkg)) segments.shift();
  const last = segments.at(-1);
  const version = last !== undefined && VERSION.test(last) ? last : undefined;
  return { words: version ? segments.slice(0, -1) : segments, version };
}

/** The client domain of a package: `agentplane.tracing.v2` → `tracingV2`. */
export function domainOf(pkg: string): string {
  const { words, version } = packageParts(pkg);
  return lowerCamel([...words, ...(version && version !== "v1" ? [version] : [])]);
}

/** The namespace a package is exported as: `agentplane.agents.v1` → `agentsV1`. */
export function namespaceOf(pkg: string): string {
  const { words, version } = packageParts(pkg);
  return lowerCamel([...words, ...(version ? [version] : [])]);
}

/** The client name of a service: `ApiKeyService` → `apiKeys`, `StoreService` → `store`. */
export function clientName(serviceName: string): string {
  const base =
    serviceName.endsWith("Service") && serviceName !== "Service" ? serviceName.slice(0, -7) : serviceName;
  const words = base.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+/g) ?? [base];
  const last = words.length - 1;
  words[last] = plural(words[last]!);
  return lowerCamel(words);
}

/** The English plural of a capitalised word, or the word itself when it stays singular. */
function plural(word: string): string {
  if (SINGULAR_WORDS.has(word) || /s$/i.test(word)) return word;
  if (/[^aeiou]y$/i.test(word)) return `${word.slice(0, -1)}ies`;
  if (/(?:x|z|ch|sh)$/i.test(word)) return `${word}es`;
  return `${word}s`;
}

function lowerCamel(words: readonly string[]): string {
  return words
    .flatMap((w) => w.split(/[_-]/))
    .filter((w) => w !== "")
    .map((w, i) =>
      i === 0 ? w.charAt(0).toLowerCase() + w.slice(1) : w.charAt(0).toUpperCase() + w.slice(1),
    )
    .join("");
}

/** The well-known types that the SDK turns into plain JSON: the field holds them directly. */
export const JSON_TYPES: ReadonlySet<string> = new Set([
  "google.protobuf.Value",
  "google.protobuf.ListValue",
]);

/** The well-known type protobuf-es itself represents as a plain object (`JsonObject`). */
const STRUCT_TYPES: ReadonlySet<string> = new Set(["google.protobuf.Struct"]);

/**
 * The messages reachable from `services` that hold a field of one of `leaves`, directly or through
 * a message field, sorted.
 */
function holdersOf(services: readonly DescService[], leaves: ReadonlySet<string>): string[] {
  const reachable = new Map<string, DescMessage>();
  const visit = (message: DescMessage) => {
    if (reachable.has(message.typeName) || message.typeName.startsWith("google.protobuf.")) return;
    reachable.set(message.typeName, message);
    for (const field of message.fields) if (field.message) visit(field.message);
  };
  for (const service of services)
    for (const method of service.methods) {
      visit(method.input);
      visit(method.output);
    }
  // A fixed point, so that recursive messages (A holds B holds A) get the same verdict whatever
  // the order they are met in.
  const holding = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (const message of reachable.values()) {
      if (holding.has(message.typeName)) continue;
      const holds = message.fields.some(
        (f) => f.message !== undefined && (leaves.has(f.message.typeName) || holding.has(f.message.typeName)),
      );
      if (holds) {
        holding.add(message.typeName);
        changed = true;
      }
    }
  }
  return [...holding].sort(byText);
}
