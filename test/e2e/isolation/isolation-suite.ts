import type { Code } from "@connectrpc/connect";
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
}

/** One RPC tried by a key of workspace B against a resource of workspace A. */
export interface IsolationCase<F> {
  /** Service.Method, and what it targets. */
  readonly name: string;
  /** The REST request; `tenantId` overrides the key's default workspace (B). */
  readonly rest: (f: F) => { method: string; path: string; body?: unknown; tenantId?: string };
  /** The same operation through Connect, with a client holding B's key. */
  readonly connect: (client: AgentplaneClient, f: F) => Promise<unknown>;
  /** The REST status and Connect code a key of B gets. */
  readonly status: number;
  readonly code: Code;
}

/**
 * The isolation cases of one service. `setup` creates the resources in workspace A (with
 * `ctx.adminA`) and returns what the cases need; `verify` checks afterwards that A's resources are
 * unchanged.
 */
export interface IsolationSuite<F = unknown> {
  readonly service: string;
  setup(ctx: IsolationContext): Promise<F>;
  readonly cases: readonly IsolationCase<F>[];
  verify?(ctx: IsolationContext, f: F): Promise<void>;
}

/** Declares a suite with its fixture type inferred. */
export function isolationSuite<F>(suite: IsolationSuite<F>): IsolationSuite<F> {
  return suite;
}
