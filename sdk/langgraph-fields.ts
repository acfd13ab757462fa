/**
 * The shapes the LangGraph Agent Server API fixes for fields our protos hold as
 * `google.protobuf.Value` (a Value so the REST wire takes what the LangGraph SDKs send: a string or
 * a list, a value or null). The SDK types those fields by name, in the `agentplane.agents.*`
 * packages only; every other Value field is any plain JSON.
 */

/** A stream mode of a run (LangGraph's `StreamMode`). */
export type StreamMode =
  | "values"
  | "updates"
  | "messages"
  | "messages-tuple"
  | "events"
  | "debug"
  | "tasks"
  | "checkpoints"
  | "custom";

/** What a run does when its thread is busy. */
export type MultitaskStrategy = "reject" | "interrupt" | "rollback" | "enqueue";

/** What a run does when its thread does not exist: make it, or fail (the default). */
export type IfNotExists = "create" | "reject";

/** What happens to a stateless run's thread when the run ends. */
export type OnCompletion = "delete" | "keep";

/** What a stream or wait does to its run when the client goes away. */
export type OnDisconnect = "cancel" | "continue";

/** When a run writes its checkpoints. */
export type Durability = "sync" | "async" | "exit";

/** Nodes to interrupt at: all (`"*"`) or those named. */
export type InterruptNodes = "*" | string[];

/** The LangGraph-fixed type of each Value field, by the field's name. */
export interface LangGraphFieldTypes {
  streamMode: StreamMode | StreamMode[];
  multitaskStrategy: MultitaskStrategy;
  ifNotExists: IfNotExists;
  onCompletion: OnCompletion;
  /** On a cron: null on thread crons, whose runs keep their thread. */
  onRunCompleted: OnCompletion | null;
  onDisconnect: OnDisconnect;
  durability: Durability;
  interruptBefore: InterruptNodes;
  interruptAfter: InterruptNodes;
  /** Deprecated form of `durability` (false is `"exit"`). */
  checkpointDuring: boolean;
  /** Seconds from now before the run may start. */
  afterSeconds: number;
  /** URL (or path of the server) called when the run ends. */
  webhook: string;
  checkpointId: string;
  feedbackKeys: string[];
  /** IANA time zone of a cron; null is UTC. */
  timezone: string | null;
  /** RFC 3339 time after which a cron starts no run; null for none. */
  endTime: string | null;
  /** RFC 3339 time a cron fires next; null when it will not. */
  nextRunDate: string | null;
  /** The user who made a cron; null for a service key. */
  userId: string | null;
  /** A cron's thread; null for a stateless cron. */
  threadId: string | null;
}
