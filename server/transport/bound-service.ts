import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { CallGuard } from "../services/call-guard.js";
import type { DatabaseGate } from "../services/system/database-gate.js";
import { problemError } from "./input/input-problem.js";
import { messageScreen } from "./input/message-screen.js";

/** Reports an error that is not a `ConnectError`: a bug or an outage, never shown to the caller. */
export type InternalErrorReporter = (error: unknown, ctx: HandlerContext) => void;

/**
 * A service implementation wrapped so that the request message is screened first (the decoding
 * layer's check, server/transport/input/: NUL, lone surrogates, nesting, float and timestamp ranges),
 * then the guard runs, and every error leaving it is a `ConnectError` whose message is safe to show.
 * The Connect router and the REST transcoder both serve `impl`, so every protocol shares one pipeline.
 */
export interface BoundService {
  /** The service descriptor from gen/. */
  readonly service: DescService;
  /** The wrapped implementation, keyed by method `localName`. */
  readonly impl: Record<string, BoundMethod>;
  /** The methods that decode their binary request themselves (see {@link OwnDecoders}). */
  readonly decoders?: OwnDecoders;
}

/**
 * Methods, by `localName`, that decode their binary request themselves and judge what it holds
 * (OTLP export: a hand-written decoder, and a screen that refuses only the spans that cannot be
 * stored). The gRPC unary path decodes their messages with the given function instead of the
 * binary screen and protobuf-es; it throws a ConnectError (INVALID_ARGUMENT) for bytes it refuses.
 * The generic message screen does not run on these methods' requests on any protocol: their
 * implementations screen them.
 */
export type OwnDecoders = Readonly<Record<string, (bytes: Uint8Array) => unknown>>;

/** A wrapped unary or server-streaming method. */
export type BoundMethod = (request: unknown, ctx: HandlerContext) => unknown;

/** Options of {@link bindService}. */
export interface BindOptions {
  /** Runs before each call; omit for services that answer without authentication. */
  guard?: CallGuard;
  /** Receives unexpected errors before they are replaced by a generic INTERNAL error. */
  onInternalError: InternalErrorReporter;
  /**
   * Turns an error that is not a `ConnectError` but is the caller's doing (a value the database
   * cannot store) into the `ConnectError` that says so; undefined leaves it unexpected.
   */
  explainError?: (error: unknown) => ConnectError | undefined;
  /**
   * Refuses calls with UNAVAILABLE while Postgres is down, and ends unary calls waiting on it when
   * it goes down (a frozen Postgres never answers); omit for services that need no database.
   */
  gate?: DatabaseGate;
}

/**
 * Turns any thrown value into a `ConnectError` a client may see. `ConnectError`s pass unchanged;
 * anything else is reported and replaced, so stack traces, SQL and driver messages never leak.
 */
export function toPublicError(
  error: unknown,
  ctx: HandlerContext,
  report: InternalErrorReporter,
): ConnectError {
  if (error instanceof ConnectError) return error;
  if (ctx.signal.aborted && isAbortError(error))
    return new ConnectError("the request was cancelled", Code.Canceled);
  report(error, ctx);
  return new ConnectError("internal error", Code.Internal);
}

function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

/**
 * Wraps every method of `impl` with the guard and the error policy. Only unary and server-streaming
 * methods are supported: the REST mapping has no form for client or bidi streams.
 */
export function bindService<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  options: BindOptions,
  decoders?: OwnDecoders,
): BoundService {
  const wrapped: Record<string, BoundMethod> = {};
  const methods = impl as unknown as Record<string, BoundMethod>;
  for (const method of service.methods) {
    const fn = methods[method.localName];
    if (!fn) throw new Error(`${service.typeName} has no implementation of ${method.name}`);
    const screened = decoders?.[method.localName] === undefined;
    wrapped[method.localName] = wrapMethod(method, fn.bind(impl), options, screened);
  }
  return decoders ? { service, impl: wrapped, decoders } : { service, impl: wrapped };
}

function wrapMethod(
  method: DescMethod,
  fn: BoundMethod,
  { guard, onInternalError, explainError, gate }: BindOptions,
  screened: boolean,
): BoundMethod {
  const toPublic = (error: unknown, ctx: HandlerContext) =>
    toPublicError(explainError?.(error) ?? error, ctx, onInternalError);
  const screen = screened ? messageScreen(method.input) : undefined;
  const admit = (request: unknown): void => {
    const problem = screen?.(request);
    if (problem) throw problemError(problem);
  };
  switch (method.methodKind) {
    case "unary":
      return async (request, ctx) => {
        try {
          admit(request);
          gate?.admit();
          const call = async () => {
            if (guard) await guard(ctx);
            return await fn(request, ctx);
          };
          return await (gate ? gate.race(call()) : call());
        } catch (error) {
          throw toPublic(error, ctx);
        }
      };
    case "server_streaming":
      return async function* (request, ctx) {
        try {
          admit(request);
          gate?.admit();
          if (guard) await (gate ? gate.race(guard(ctx)) : guard(ctx));
          yield* fn(request, ctx) as AsyncIterable<unknown>;
        } catch (error) {
          throw toPublic(error, ctx);
        }
      };
    default:
      throw new Error(
        `${method.parent.typeName}.${method.name}: ${method.methodKind} methods are not supported`,
      );
  }
}
