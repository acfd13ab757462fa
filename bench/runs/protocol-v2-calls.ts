import { Agent, type ClientRequest, type OutgoingHttpHeaders, request } from "node:http";
import { performance } from "node:perf_hooks";

/** When a protocol run's events arrived, in ms after its `run.start` command was sent. */
export interface ProtocolRunTiming {
  /** The first `values` event. */
  firstValuesMs: number;
  /** The root graph's terminal `lifecycle` event (the run ended). */
  endMs: number;
}

/** Runs of the thread-centric streaming protocol, as `ThreadStream` drives them over SSE. */
export interface ProtocolClient {
  /**
   * On a new thread: opens its event stream (`POST /threads/{id}/stream/events`, values and
   * lifecycle), waits for the stream's headers, then sends `run.start` (`POST /threads/{id}/commands`)
   * and times the first `values` event and the root's terminal lifecycle, after which the stream is
   * closed. Fails on a non-200 answer, a refused command, or a stream without those events.
   */
  run(assistantId: string, input: unknown): Promise<ProtocolRunTiming>;
  close(): void;
}

/** The root graph's terminal lifecycle in an SSE frame's data. */
const TERMINAL = /"namespace":\[\],"timestamp":\d+,"data":\{"event":"(completed|failed|interrupted)"/;
/** `event: values` at the start of a line. */
const VALUES_EVENT = /(^|\n)event: ?values\r?\n/;

/**
 * A node:http client over a keep-alive Agent with `maxSockets` connections (two per run in flight:
 * its stream and its command) to 127.0.0.1:`port`.
 */
export function createProtocolClient(
  port: number,
  headers: OutgoingHttpHeaders,
  runsInFlight: number,
): ProtocolClient {
  const agent = new Agent({ keepAlive: true, maxSockets: runsInFlight * 2 });

  const json = (method: string, path: string, body: unknown) =>
    new Promise<{ status: number; text: string }>((done, fail) => {
      const payload = JSON.stringify(body);
      const req = request(
        {
          agent,
          host: "127.0.0.1",
          port,
          method,
          path,
          headers: {
            ...headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
          });
          res.on("end", () => done({ status: res.statusCode ?? 0, text }));
          res.on("error", fail);
        },
      );
      req.on("error", fail);
      req.end(payload);
    });

  const run = async (assistantId: string, input: unknown): Promise<ProtocolRunTiming> => {
    const thread = await json("POST", "/threads", {});
    const threadId = (JSON.parse(thread.text) as { thread_id?: string }).thread_id;
    if (thread.status !== 200 || !threadId)
      throw new Error(`thread: HTTP ${thread.status} ${thread.text.slice(0, 200)}`);
    let stream: ClientRequest | undefined;
    let started = Number.NaN;
    let firstValuesMs = Number.NaN;
    let resolveOpen: () => void = () => {};
    let failOpen: (error: Error) => void = () => {};
    const opened = new Promise<void>((resolve, reject) => {
      resolveOpen = resolve;
      failOpen = reject;
    });
    const ended = new Promise<ProtocolRunTiming>((done, fail) => {
      const payload = JSON.stringify({ channels: ["values", "lifecycle"] });
      stream = request(
        {
          agent,
          host: "127.0.0.1",
          port,
          method: "POST",
          path: `/threads/${threadId}/stream/events`,
          headers: {
            ...headers,
            accept: "text/event-stream",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          if (res.statusCode !== 200) {
            failOpen(new Error(`stream: HTTP ${res.statusCode}`));
            fail(new Error(`stream: HTTP ${res.statusCode}`));
            res.resume();
            return;
          }
          resolveOpen();
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
            if (Number.isNaN(firstValuesMs) && VALUES_EVENT.test(text))
              firstValuesMs = performance.now() - started;
            if (TERMINAL.test(text)) {
              const endMs = performance.now() - started;
              stream?.destroy();
              if (Number.isNaN(firstValuesMs)) fail(new Error(`no values event in: ${text.slice(0, 300)}`));
              else done({ firstValuesMs, endMs });
            }
          });
          res.on("error", () => {});
        },
      );
      stream.on("error", (error) => {
        failOpen(error);
        if (!Number.isNaN(firstValuesMs)) return;
        fail(error);
      });
      stream.end(payload);
    });
    await opened;
    started = performance.now();
    const answer = await json("POST", `/threads/${threadId}/commands`, {
      id: 1,
      method: "run.start",
      params: { assistant_id: assistantId, input },
    });
    if (answer.status !== 200 || !answer.text.includes('"type":"success"')) {
      stream?.destroy();
      throw new Error(`run.start: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
    }
    return ended;
  };

  return { run, close: () => agent.destroy() };
}
