import type { NodeServerResponse } from "./rest/node-types.js";

/** A call's abort signal, made only when someone reads it, and the end of the call. */
export interface LazyCallSignal {
  /** The call's signal: aborted when the client goes away, the server shuts down or the deadline passes. */
  signal(): AbortSignal;
  /** Ends the call: its signal, if anyone asked for it, is aborted with `completed` and stops listening. */
  finish(): void;
}

/** What a call's signal listens to. */
export interface LazyCallSignalInit {
  res: NodeServerResponse;
  shutdownSignal: AbortSignal | undefined;
  /** The abort reason when the response closes before it was ended. */
  clientGone: () => unknown;
  /** The reason a finished call's signal carries; nothing inspects it, only that it is aborted. */
  completed: unknown;
  /** When the call's deadline passes (ms since the epoch), and the reason it aborts with then. */
  deadline?: { at: number; reason: () => unknown };
}

/**
 * The abort signal of a unary call, built for the hot path shared by the REST and gRPC fast paths:
 * connect-es makes AbortControllers and their listeners for every call, yet most unary calls never
 * read their signal. Here nothing is made until {@link LazyCallSignal.signal} is first called.
 */
export function createLazyCallSignal(init: LazyCallSignalInit): LazyCallSignal {
  const { res, shutdownSignal, deadline } = init;
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  let finished = false;
  const onClose = () => {
    // A response that finished closes too; only a close before the end means the client went away.
    // Not writableFinished: Node's HTTP/2 compatibility layer reports a reset stream as finished.
    if (!res.writableEnded) controller?.abort(init.clientGone());
  };
  const onShutdown = () => controller?.abort(shutdownSignal?.reason);
  const onDeadline = () => controller?.abort(deadline?.reason());

  return {
    signal() {
      if (controller) return controller.signal;
      controller = new AbortController();
      if (finished) controller.abort(init.completed);
      else if (shutdownSignal?.aborted) controller.abort(shutdownSignal.reason);
      else if (res.destroyed && !res.writableEnded) onClose();
      else if (deadline !== undefined && deadline.at <= Date.now()) onDeadline();
      else {
        res.once("close", onClose);
        shutdownSignal?.addEventListener("abort", onShutdown, { once: true });
        if (deadline !== undefined) timer = setTimeout(onDeadline, deadline.at - Date.now());
      }
      return controller.signal;
    },
    finish() {
      finished = true;
      if (!controller) return;
      clearTimeout(timer);
      res.off("close", onClose);
      shutdownSignal?.removeEventListener("abort", onShutdown);
      controller.abort(init.completed);
    },
  };
}
