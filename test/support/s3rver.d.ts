// s3rver 3.7.1 ships no types; these cover what test/support/s3-server.ts uses.

declare module "s3rver" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  import type { AddressInfo } from "node:net";

  /** The part of a Koa context a middleware in front of s3rver needs. */
  export interface KoaContext {
    req: IncomingMessage;
    res: ServerResponse;
    method: string;
    /** The request target as received: raw (still percent-encoded) path and query. */
    originalUrl: string;
    /** The path, still percent-encoded, without the query. */
    path: string;
    /** The parsed query: a parameter present without a value is "". */
    query: Record<string, string | string[] | undefined>;
    status: number;
    type: string;
    body: unknown;
    /** A request header's value, or "" when absent. */
    get(field: string): string;
  }

  /** A Koa middleware. */
  export type KoaMiddleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void> | void;

  /** Constructor options (a subset). */
  export interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    configureBuckets?: { name: string }[];
  }

  /** The s3rver Koa application. */
  export default class S3rver {
    constructor(options?: S3rverOptions);
    /** Koa's middleware stack, in order; s3rver's own logger, XML encoder and router are in it. */
    middleware: KoaMiddleware[];
    /** Creates the configured buckets and listens; resolves to the bound address. */
    run(): Promise<AddressInfo>;
    /** Stops listening; resolves once open connections have ended. */
    close(): Promise<void>;
    /** The listening server, set by `run()`. */
    httpServer?: import("node:http").Server;
  }
}

declare module "s3rver/lib/models/account.js" {
  /** An s3rver account with its access keys. */
  interface AWSAccount {
    /** Adds a key pair to this account and to the registry s3rver looks access key ids up in. */
    createKeyPair(accessKeyId: string, secretAccessKey: string): void;
    /** Removes a key pair from this account and the registry. */
    revokeAccessKey(accessKeyId: string): void;
  }

  /** The module export: the account class, plus the built-in account every request runs as. */
  const account: {
    DUMMY_ACCOUNT: AWSAccount;
  };
  export default account;
}
