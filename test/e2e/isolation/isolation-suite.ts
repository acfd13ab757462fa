import { Code } from "@connectrpc/connect";
import type { AgentplaneClient } from "../../../sdk/index.js";
import type { TestApp } from "../../support/test-app.js";

/** The two workspaces of the tenant-isolation test and their clients. */
export interface IsolationContext {
  /** The test server. */
  readonly t: TestApp;
  /** Workspace A: holds the resources under test. */
  readonly workspaceA: string;
  /** Workspace B: the attacker's workspace. */
  readonly workspaceB: string;
  /** The admin, acting in workspace A. */
  readonly adminA: AgentplaneClient;
  /** The admin, acting in workspace B: gives B look-alikes of A's resources. */
  readonly adminB: AgentplaneClient;
}

/** A REST request; `tenantId` overrides the key's default workspace (B). */
export interface RestCall {
  method: string;
  path: string;
  body?: unknown;
  tenantId?: string;
}

/** One RPC, tried by a key of workspace B over REST and over Connect. */
export interface CaseCall<F> {
  /** Service.Method, and what it targets. */
  readonly name: string;
  /** The REST request. */
  readonly rest: (f: F) => RestCall;
  /** The same operation through Connect, with a client holding B's key. */
  readonly connect: (client: AgentplaneClient, f: F) => Promise<unknown>;
}

/** B is refused: the REST status and Connect code it gets. */
export interface RefusedCase<F> extends CaseCall<F> {
  readonly kind: "refused";
  readonly status: number;
  readonly code: Code;
}

/**
 * B is answered, and the answer holds nothing of A: no REST body or header, and no Connect
 * response, contains any of the suite's `secrets`. `connect` may resolve to the part of the
 * response that matches the REST body (`.then((r) => r.threads)` for a REST bare array), so one
 * check reads both.
 */
export interface AnsweredCase<F> extends CaseCall<F> {
  readonly kind: "answered";
  /** Checks B's answer (REST JSON, or what `connect` resolved to) further: a count that excludes A. */
  readonly expectB?: (answer: unknown, f: F) => void;
  /**
   * The control: the same call made by A's admin, in A. By default its answer must contain a secret
   * of A, which proves the call reaches A's data when A asks, so B's clean answer means something.
   * A function replaces that check (a count of A's); `false` skips the control, for a write whose
   * control would change A.
   */
  readonly expectA?: ((answer: unknown, f: F) => void) | false;
}

/** One row of the table. */
export type IsolationCase<F> = RefusedCase<F> | AnsweredCase<F>;

/**
 * The isolation cases of one service. `setup` creates the resources in workspace A (with
 * `ctx.adminA`), and look-alikes in B where cases need them, and returns what the cases need;
 * `verify` checks afterwards that A's resources are unchanged.
 */
export interface IsolationSuite<F = unknown> {
  readonly service: string;
  setup(ctx: IsolationContext): Promise<F>;
  readonly cases: readonly IsolationCase<F>[];
  /** Text only A's resources hold (ids, marker values); needed by answered cases. */
  secrets?(f: F): string[];
  verify?(ctx: IsolationContext, f: F): Promise<void>;
}

/** Declares a suite with its fixture type inferred. */
export function isolationSuite<F>(suite: IsolationSuite<F>): IsolationSuite<F> {
  return suite;
}

/** Spread into a case: B's call of A's resource by id gets 404 / NOT_FOUND. */
export const NOT_FOUND = { kind: "refused", status: 404, code: Code.NotFound } as const;

/** Spread into a case: B's call naming workspace A as its tenant gets 403 / PERMISSION_DENIED. */
export const DENIED = { kind: "refused", status: 403, code: Code.PermissionDenied } as const;

/** Spread into a case: B's search, count, list or query is answered, without anything of A. */
export const ANSWERED = { kind: "answered" } as const;

/** A check that an answer is a list of `n` items (a REST bare array, or the Connect list). */
export function listOf(n: number) {
  return (answer: unknown) => {
    if (!Array.isArray(answer)) throw new Error(`expected a list, got ${JSON.stringify(answer)}`);
    if (answer.length !== n)
      throw new Error(`expected ${n} items, got ${answer.length}: ${JSON.stringify(answer).slice(0, 300)}`);
  };
}

/** A check that an answer is the number `n` (a REST bare integer, or the Connect count). */
export function countOf(n: number) {
  return (answer: unknown) => {
    if (answer !== n) throw new Error(`expected a count of ${n}, got ${JSON.stringify(answer)}`);
  };
}
