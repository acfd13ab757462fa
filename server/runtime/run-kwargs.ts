import type { StreamMode } from "./run-stream-modes.js";

/** A command instead of input, as the API takes it. */
export interface RunCommand {
  resume?: unknown;
  update?: unknown;
  goto?: unknown;
}

/** The run config the graph gets: the assistant's, the thread's and the request's, merged. */
export interface RunConfig {
  tags?: string[];
  recursion_limit?: number;
  configurable: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * A run's stored create payload (`Run.kwargs`): everything the worker needs to execute it, already
 * validated and merged by the service.
 */
export interface RunKwargs {
  [key: string]: unknown;
  input: unknown;
  command: RunCommand | null;
  config: RunConfig;
  context: Record<string, unknown>;
  stream_mode: StreamMode[];
  /** Stream subgraph events as `<mode>|<namespace>`. */
  subgraphs: boolean;
  /** Keep the events after the run ends, for joins with `Last-Event-ID`. */
  resumable: boolean;
  interrupt_before: "*" | string[] | null;
  interrupt_after: "*" | string[] | null;
  /** The checkpoint to start from. */
  checkpoint: { checkpoint_id: string; checkpoint_ns: string } | null;
  durability: "sync" | "async" | "exit" | null;
  webhook: string | null;
  feedback_keys: string[] | null;
  /** A stateless run whose thread is deleted when it ends. */
  temporary: boolean;
  on_disconnect: "cancel" | "continue";
  /**
   * A run of the thread-centric streaming protocol: it streams protocol events (every channel, of
   * every namespace) instead of the stream modes' events.
   */
  protocol?: true;
  /** A protocol run that answers interrupts: their ids, announced as its first event. */
  protocol_answers?: string[];
  /**
   * Refuse the resume when an interrupt it answers by id is not waiting: the run then fails before
   * the graph runs (`UnknownInterruptError`), and the thread stays as it was.
   */
  strict_resume?: true;
}
