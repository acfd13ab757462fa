import { type DescField, type DescMethod, type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import {
  compareSpecificity,
  type PathTemplate,
  parsePathTemplate,
  splitPath,
  type TemplateVariable,
} from "./path-template.js";

/** Where the request body goes: nowhere, the whole request message, or one top-level field. */
export type BodyMapping =
  | { readonly kind: "none" }
  | { readonly kind: "all" }
  | { readonly kind: "field"; readonly field: DescField };

/** A template variable and the request field chain it sets (`book.name` → [book, name]). */
export interface PathBinding {
  /** The variable of the template. */
  readonly variable: TemplateVariable;
  /** The fields from the request message down to the scalar or enum field the value sets. */
  readonly fields: readonly DescField[];
}

/** One HTTP binding of one RPC: a rule of its google.api.http option. */
export interface Route {
  /** Upper-case HTTP method, or the `custom` pattern's kind as written. */
  readonly httpMethod: string;
  /** The compiled path template. */
  readonly template: PathTemplate;
  /** The service of `method`. */
  readonly service: DescService;
  /** The RPC this binding calls. */
  readonly method: DescMethod;
  /** The rule's `body`. */
  readonly body: BodyMapping;
  /** The rule's `response_body` field, or `undefined` for the whole response message. */
  readonly responseBody: DescField | undefined;
  /** One binding per template variable, in template order. */
  readonly pathBindings: readonly PathBinding[];
}

/** The outcome of a lookup that matched a path. */
export type RouteLookup =
  | { readonly kind: "match"; readonly route: Route; readonly captures: string[] }
  | { readonly kind: "method-not-allowed"; readonly allowed: readonly string[] };

/** All REST routes of a set of services, most specific first. */
export interface RouteTable {
  /** Every route, most specific first. */
  readonly routes: readonly Route[];
  /**
   * Finds the route for a request. `path` is the raw URL path without the query string. Returns
   * `undefined` when no template matches the path at all.
   */
  lookup(httpMethod: string, path: string): RouteLookup | undefined;
}

/**
 * Builds the routes from the `google.api.http` option (and its `additional_bindings`) of every
 * method of `services`. Methods without the option get no route. Throws at start-up, naming the
 * method and the rule, when an option is invalid: an unknown `body`/`response_body` field, a path
 * variable that names no scalar field, a path variable bound to the `body` field, a client- or
 * bidi-streaming method, or two bindings with the same HTTP method and equivalent templates.
 */
export function createRouteTable(services: readonly DescService[]): RouteTable {
  const routes: Route[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const top = getOption(method, http);
      if (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming") {
        throw new Error(
          `${method.parent.typeName}.${method.name}: ${method.methodKind} methods have no REST mapping`,
        );
      }
      routes.push(compileRule(method, top));
      for (const extra of top.additionalBindings) {
        if (extra.additionalBindings.length > 0) {
          throw new Error(`${method.parent.typeName}.${method.name}: additional_bindings must not nest`);
        }
        routes.push(compileRule(method, extra));
      }
    }
  }
  rejectConflicts(routes);
  routes.sort((a, b) => compareSpecificity(a.template, b.template));

  const byMethod = new Map<string, Route[]>();
  for (const route of routes) {
    const list = byMethod.get(route.httpMethod) ?? [];
    list.push(route);
    byMethod.set(route.httpMethod, list);
  }

  return {
    routes,
    lookup(httpMethod, path) {
      const segments = splitPath(path);
      if (segments === undefined) return undefined;
      for (const route of byMethod.get(httpMethod) ?? []) {
        const captures = route.template.match(segments);
        if (captures) return { kind: "match", route, captures };
      }
      const allowed = new Set<string>();
      for (const route of routes) if (route.template.match(segments)) allowed.add(route.httpMethod);
      return allowed.size === 0 ? undefined : { kind: "method-not-allowed", allowed: [...allowed].sort() };
    },
  };
}

/** The methods a path allows, with HEAD beside GET (answered by the GET route). */
export function withHead(methods: readonly string[]): string[] {
  return methods.includes("GET") && !methods.includes("HEAD") ? [...methods, "HEAD"] : [...methods];
}

function compileRule(method: DescMethod, rule: HttpRule): Route {
  const { httpMethod, path } = patternOf(method, rule);
  const where = `${method.parent.typeName}.${method.name} (${httpMethod} ${path})`;
  const fail = (why: string): never => {
    throw new Error(`${where}: ${why}`);
  };
  let template: PathTemplate;
  try {
    template = parsePathTemplate(path);
  } catch (error) {
    return fail((error as Error).message);
  }
  const input = method.input;
  const body = bodyMapping(rule.body, method, fail);
  const responseBody =
    rule.responseBody === "" || rule.responseBody === "*"
      ? undefined
      : (method.output.fields.find((f) => f.name === rule.responseBody) ??
        fail(`response_body "${rule.responseBody}" is not a field of ${method.output.typeName}`));

  const pathBindings = template.variables.map((variable): PathBinding => {
    const fields: DescField[] = [];
    let message = input;
    const names = variable.fieldPath.split(".");
    names.forEach((name, i) => {
      const field =
        message.fields.find((f) => f.name === name) ??
        fail(`path variable "${variable.fieldPath}": ${message.typeName} has no field "${name}"`);
      fields.push(field);
      if (i < names.length - 1) {
        if (field.fieldKind !== "message") {
          fail(`path variable "${variable.fieldPath}": "${name}" is not a singular message field`);
        } else {
          message = field.message;
        }
      } else if (field.fieldKind !== "scalar" && field.fieldKind !== "enum") {
        fail(`path variable "${variable.fieldPath}" must name a singular scalar or enum field`);
      }
    });
    if (body.kind === "field" && fields.length === 1 && fields[0] === body.field) {
      fail(`path variable "${variable.fieldPath}" is also the body field`);
    }
    return { variable, fields };
  });

  return { httpMethod, template, service: method.parent, method, body, responseBody, pathBindings };
}

function patternOf(method: DescMethod, rule: HttpRule): { httpMethod: string; path: string } {
  const pattern = rule.pattern;
  switch (pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return { httpMethod: pattern.case.toUpperCase(), path: pattern.value };
    case "custom":
      return { httpMethod: pattern.value.kind, path: pattern.value.path };
    default:
      throw new Error(`${method.parent.typeName}.${method.name}: a google.api.http rule has no pattern`);
  }
}

function bodyMapping(body: string, method: DescMethod, fail: (why: string) => never): BodyMapping {
  if (body === "") return { kind: "none" };
  if (body === "*") return { kind: "all" };
  const field = method.input.fields.find((f) => f.name === body);
  return field ? { kind: "field", field } : fail(`body "${body}" is not a field of ${method.input.typeName}`);
}

function rejectConflicts(routes: readonly Route[]): void {
  const seen = new Map<string, Route>();
  for (const route of routes) {
    const key = `${route.httpMethod} ${route.template.shape}`;
    const other = seen.get(key);
    if (other) {
      throw new Error(
        `REST route conflict: ${route.httpMethod} ${route.template.text} (${route.method.parent.typeName}.${route.method.name}) ` +
          `and ${other.httpMethod} ${other.template.text} (${other.method.parent.typeName}.${other.method.name}) match the same paths`,
      );
    }
    seen.set(key, route);
  }
}
