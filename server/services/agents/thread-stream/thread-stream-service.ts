/**
 * ThreadStreamService: the streaming protocol's commands and event stream as RPCs, on their REST
 * paths (`POST /threads/{id}/commands`, `POST /threads/{id}/stream/events`) and on gRPC and
 * Connect. The WebSocket adapter serves the same commands and events on one connection.
 */
import { create, fromJson, type JsonObject, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ThreadCommandResponseSchema,
  type ThreadStreamService,
} from "../../../../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import { ServerSentEventSchema } from "../../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import { invalid } from "../../request-validation.js";
import type { StreamReaderDeps } from "../run-streams.js";
import { loadThread } from "../thread-access.js";
import { parseEventFilter, protocolEventStream, seqOfEventId } from "./protocol-event-stream.js";
import { createThreadCommands, type ThreadCommandAnswer, type ThreadCommandDeps } from "./thread-commands.js";

/** Dependencies of {@link createThreadStreamService}. */
export interface ThreadStreamServiceDeps extends ThreadCommandDeps {
  readers: StreamReaderDeps;
}

/**
 * A stream message with no event, id or data: the SSE form writes it as a comment, which sends the
 * response's headers at once (clients wait for them before they send the command that starts a
 * run), and Connect and gRPC clients receive it as an empty message to skip.
 */
export const STREAM_OPENED = create(ServerSentEventSchema, {});

/** An answer as the RPC's message. */
function answerMessage(answer: ThreadCommandAnswer) {
  const meta = answer.meta;
  if (answer.type === "success")
    return create(ThreadCommandResponseSchema, {
      type: "success",
      ...(answer.id !== null ? { id: answer.id } : {}),
      result: fromJson(ValueSchema, answer.result),
      meta,
    });
  return create(ThreadCommandResponseSchema, {
    type: "error",
    ...(answer.id !== null ? { id: answer.id } : {}),
    error: answer.error,
    message: answer.message,
    meta,
  });
}

/** Creates the service. */
export function createThreadStreamService(
  deps: ThreadStreamServiceDeps,
): ServiceImpl<typeof ThreadStreamService> {
  const commands = createThreadCommands(deps);
  return {
    async sendThreadCommand(request, ctx) {
      if (request.id === undefined) throw invalid("a protocol command needs id: a whole number of 0 or more");
      if (request.method === "") throw invalid("a protocol command needs method: a string");
      const params: JsonObject = request.params ?? {};
      const answer = await commands.handle(ctx, request.threadId, {
        id: request.id,
        method: request.method,
        params,
      });
      return answerMessage(answer);
    },

    async *streamThreadEvents(request, ctx) {
      const { workspaceId, thread } = await loadThread(deps.threads, ctx, "threads:read", request.threadId);
      const filter = parseEventFilter({
        channels: request.channels,
        namespaces: request.namespaces ? toJson(ListValueSchema, request.namespaces) : undefined,
        depth: request.depth,
      });
      if ("problem" in filter) throw invalid(filter.problem);
      const lastEventId = ctx.requestHeader.get("last-event-id") ?? request.lastEventId;
      let afterSeq = request.since === undefined ? undefined : Number(request.since);
      if (afterSeq === undefined && lastEventId !== undefined && lastEventId !== "") {
        afterSeq = seqOfEventId(lastEventId);
        if (afterSeq === undefined)
          throw invalid(`Last-Event-ID ${JSON.stringify(lastEventId)} is not an event id of this stream`);
      }
      if (afterSeq !== undefined && afterSeq < 0) throw invalid("since must be a seq of 0 or more");
      yield STREAM_OPENED;
      for await (const event of protocolEventStream(
        deps.readers,
        { workspaceId, threadId: thread.threadId },
        { afterSeq: afterSeq ?? 0, filter, signal: ctx.signal },
      ))
        yield create(ServerSentEventSchema, {
          id: event.event_id,
          event: event.method,
          data: fromJson(ValueSchema, event),
        });
    },
  };
}
