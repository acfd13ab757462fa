import { gzipSync } from "node:zlib";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  HOSTILE_NUMBERS,
  HOSTILE_TIMESTAMPS,
  HOSTILE_URL_VALUES,
  MALFORMED_JSON_BODIES,
  NESTING_DEPTHS,
  nestedArrays,
  nestedObjects,
  UNSTORABLE_STRINGS,
  WRONG_QUERY_VALUES,
  WRONG_TYPES,
} from "./hostile-values.js";
import { type JsonPath, positionsOf, withKey, withValue } from "./json-sample.js";
import type { RawRequest } from "./raw-http.js";
import type { SeededRandom } from "./seeded-random.js";

/** A route with plausible input, from which hostile variants are derived. */
export interface FuzzRoute {
  /** `METHOD /template`, for reports. */
  readonly name: string;
  readonly method: string;
  /** The path template, `{name}` (or `{name=...}`) for each variable. */
  readonly template: string;
  /** A plausible raw (already percent-encoded) value of each path variable. */
  readonly pathValues: Readonly<Record<string, string>>;
  /** Plausible query parameters (decoded). */
  readonly query: readonly (readonly [string, string])[];
  /** A plausible JSON body; undefined when the route reads none. */
  readonly body: JsonValue | undefined;
  /** Headers every request to the route carries (the API key). */
  readonly headers: Readonly<Record<string, string>>;
}

/** How many positions of each kind one route's probes cover at most, to bound a run's length. */
const LIMITS = {
  strings: 10,
  keys: 5,
  numbers: 4,
  timestamps: 3,
  topLevelFields: 5,
  queryParams: 6,
  deepMembers: 2,
} as const;

const variablePattern = /\{([^}=]+)(?:=[^}]*)?\}/g;

/** The path of `route` with its variables replaced (`override` wins for the named variable). */
export function pathOf(route: FuzzRoute, override?: { name: string; raw: string }): string {
  return route.template.replace(variablePattern, (_, name: string) =>
    override?.name === name ? override.raw : (route.pathValues[name] ?? "x"),
  );
}

function encodeQuery(query: readonly (readonly [string, string])[]): string {
  return query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join("&");
}

function targetOf(route: FuzzRoute, rawQuery = encodeQuery(route.query)): string {
  const path = pathOf(route);
  return rawQuery === "" ? path : `${path}?${rawQuery}`;
}

/** The JSON text of a value; lone surrogates become `\udXXX` escapes (JSON.stringify's well-formed output). */
function jsonText(value: JsonValue): string {
  return JSON.stringify(value);
}

/** Every hostile variant of one route: body, path, query, encoding and request target. */
export function probesOf(route: FuzzRoute, random: SeededRandom, gzipBomb: Buffer): RawRequest[] {
  return [
    ...bodyProbes(route, random, gzipBomb),
    ...pathProbes(route, random),
    ...queryProbes(route, random),
    ...targetProbes(route),
  ];
}

function bodyProbes(route: FuzzRoute, random: SeededRandom, gzipBomb: Buffer): RawRequest[] {
  const takesBody = route.body !== undefined || ["POST", "PUT", "PATCH"].includes(route.method);
  const base: JsonValue = route.body ?? {};
  const json = { ...route.headers, "Content-Type": "application/json" };
  const send = (
    label: string,
    body: Buffer | string,
    headers: Record<string, string> = json,
  ): RawRequest => ({
    label: `${route.name}: ${label}`,
    method: route.method,
    target: targetOf(route),
    headers,
    body,
  });
  const probes: RawRequest[] = [send("plausible input", jsonText(base))];
  if (!takesBody) {
    // A route without a body must still ignore or refuse one, whatever it holds.
    probes.push(send("deep body on a route without one", nestedArrays(10_000)));
    probes.push(send("malformed body on a route without one", "{,}"));
    return probes;
  }
  const positions = positionsOf(base);
  const at = (path: JsonPath) => path.map(String).join(".") || "(root)";
  for (const path of random.sample(positions.strings, LIMITS.strings)) {
    for (const value of random.sample(UNSTORABLE_STRINGS, 2)) {
      probes.push(
        send(`string ${JSON.stringify(value)} at ${at(path)}`, jsonText(withValue(base, path, value))),
      );
    }
  }
  for (const path of random.sample(positions.keys, LIMITS.keys)) {
    for (const name of ["k\u0000", "\ud800k"]) {
      probes.push(
        send(`member name ${JSON.stringify(name)} at ${at(path)}`, jsonText(withKey(base, path, name))),
      );
    }
  }
  for (const path of random.sample(positions.numbers, LIMITS.numbers)) {
    for (const value of random.sample(HOSTILE_NUMBERS, 3)) {
      probes.push(
        send(`number ${JSON.stringify(value)} at ${at(path)}`, jsonText(withValue(base, path, value))),
      );
    }
  }
  for (const path of random.sample(positions.timestamps, LIMITS.timestamps)) {
    for (const value of random.sample(HOSTILE_TIMESTAMPS, 4)) {
      probes.push(send(`timestamp ${value} at ${at(path)}`, jsonText(withValue(base, path, value))));
    }
  }
  const members = isObject(base) ? Object.keys(base) : [];
  for (const member of random.sample(members, LIMITS.topLevelFields)) {
    for (const value of random.sample(WRONG_TYPES, 2)) {
      probes.push(
        send(`wrong type ${JSON.stringify(value)} at ${member}`, jsonText(withValue(base, [member], value))),
      );
    }
  }
  for (const depth of NESTING_DEPTHS) {
    probes.push(send(`arrays nested ${depth} deep`, nestedArrays(depth)));
    probes.push(send(`objects nested ${depth} deep`, nestedObjects(depth)));
    for (const member of random.sample(members, LIMITS.deepMembers)) {
      const marked = jsonText(withValue(base, [member], "__deep__"));
      probes.push(send(`${member} nested ${depth} deep`, marked.replace('"__deep__"', nestedObjects(depth))));
    }
  }
  for (const text of MALFORMED_JSON_BODIES) probes.push(send(`malformed JSON ${JSON.stringify(text)}`, text));
  const whole = jsonText(base);
  probes.push(send("truncated JSON", whole.slice(0, Math.max(1, Math.floor(whole.length / 2)))));
  probes.push(send("empty body", ""));
  probes.push(
    send(
      "invalid UTF-8 in a string",
      Buffer.concat([Buffer.from('{"x":"'), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from('"}')]),
    ),
  );
  const gzip = { ...json, "Content-Encoding": "gzip" };
  probes.push(send("gzip header, plain body", whole, gzip));
  probes.push(send("truncated gzip", gzipSync(whole).subarray(0, 12), gzip));
  probes.push(send("gzip of a deep document", gzipSync(nestedArrays(10_000)), gzip));
  // Every route reads gzip through the same reader: a quarter of them, chosen by the seed, get the bomb.
  if (random.next() < 0.25) probes.push(send("gzip bomb", gzipBomb, gzip));
  probes.push(send("unsupported encoding", whole, { ...json, "Content-Encoding": "br" }));
  probes.push(send("stacked encodings", whole, { ...json, "Content-Encoding": "gzip, identity" }));
  return probes;
}

function pathProbes(route: FuzzRoute, random: SeededRandom): RawRequest[] {
  const probes: RawRequest[] = [];
  for (const name of Object.keys(route.pathValues)) {
    for (const raw of random.sample(HOSTILE_URL_VALUES, 5)) {
      const query = encodeQuery(route.query);
      const path = pathOf(route, { name, raw });
      probes.push({
        label: `${route.name}: path variable ${name} = ${raw.slice(0, 20)}`,
        method: route.method,
        target: query === "" ? path : `${path}?${query}`,
        headers: { ...route.headers, "Content-Type": "application/json" },
        body: route.body === undefined ? undefined : jsonText(route.body),
      });
    }
  }
  return probes;
}

function queryProbes(route: FuzzRoute, random: SeededRandom): RawRequest[] {
  const probes: RawRequest[] = [];
  const send = (label: string, rawQuery: string): RawRequest => ({
    label: `${route.name}: ${label}`,
    method: route.method,
    target: targetOf(route, rawQuery),
    headers: { ...route.headers, "Content-Type": "application/json" },
    body: route.body === undefined ? undefined : jsonText(route.body),
  });
  const names = [...new Set(route.query.map(([name]) => name))];
  for (const name of random.sample(names, LIMITS.queryParams)) {
    const others = encodeQuery(route.query.filter(([n]) => n !== name));
    const values = [...random.sample(HOSTILE_URL_VALUES, 3), ...random.sample(WRONG_QUERY_VALUES, 3)];
    for (const raw of values) {
      const value = WRONG_QUERY_VALUES.includes(raw) ? encodeURIComponent(raw) : raw;
      probes.push(
        send(`query ${name} = ${raw.slice(0, 24)}`, [others, `${name}=${value}`].filter(Boolean).join("&")),
      );
    }
  }
  const base = encodeQuery(route.query);
  for (const junk of ["%00=1", "%ZZ=1", "a=%", "=x", "&&", "x%ED%A0%80=1"]) {
    probes.push(send(`query junk ${junk}`, [base, junk].filter(Boolean).join("&")));
  }
  if (names[0] !== undefined) probes.push(send("query parameter twice", `${base}&${base}`));
  return probes;
}

function targetProbes(route: FuzzRoute): RawRequest[] {
  const path = pathOf(route);
  const headers = { ...route.headers, "Content-Type": "application/json" };
  const body = route.body === undefined ? undefined : jsonText(route.body);
  return [`${path}?%ZZ`, `${path}/%ZZ`, `http://[bad${path}`, `http://127.0.0.1${path}`, `//x${path}`].map(
    (target) => ({
      label: `${route.name}: request target ${target}`,
      method: route.method,
      target,
      headers,
      body,
    }),
  );
}

function isObject(value: JsonValue): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
