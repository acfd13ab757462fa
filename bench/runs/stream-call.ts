import { Agent, type OutgoingHttpHeaders, request } from "node:http";
import { performance } from "node:perf_hooks";

/** When a streamed run's events arrived, in ms after the request was sent. */
export interface StreamTiming {
  /** The first `values` event. */
  firstValuesMs: number;
  /** The end of the stream (the run finished). */
  endMs: number;
}

/** A keep-alive client that POSTs a run stream and times its events. */
export interface StreamClient {
  /** POSTs `body` to `path` and reads the SSE answer to its end. */
  stream(path: string, body: unknown): Promise<StreamTiming>;
  close(): void;
}

/** `event: values` at the start of a line: the first values event of the stream. */
const VALUES_EVENT = /(^|\n)event: ?values\r?\n/;

/**
 * A node:http client over a keep-alive Agent with `maxSockets` connections to 127.0.0.1:`port`
 * that streams runs: it notes when the first `values` event arrives and when the stream ends, and
 * fails on a non-200 answer or a stream without a values event.
 */
export function createStreamClient(
  port: number,
  headers: OutgoingHttpHeaders,
  maxSockets: number,
): StreamClient {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const stream = (path: string, body: unknown) =>
    new Promise<StreamTiming>((done, fail) => {
      const payload = JSON.stringify(body);
      const started = performance.now();
      let firstValuesMs = Number.NaN;
      let text = "";
      const req = request(
        {
          agent,
          host: "127.0.0.1",
          port,
          method: "POST",
          path,
          headers: {
            ...headers,
            accept: "text/event-stream",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          },
        },
        (res) => {
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (Number.isNaN(firstValuesMs)) {
              text += chunk;
              if (VALUES_EVENT.test(text)) firstValuesMs = performance.now() - started;
            }
          });
          res.on("error", fail);
          res.on("end", () => {
            if (res.statusCode !== 200) fail(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
            else if (Number.isNaN(firstValuesMs))
              fail(new Error(`no values event in: ${text.slice(0, 300)}`));
            else done({ firstValuesMs, endMs: performance.now() - started });
          });
        },
      );
      req.on("error", fail);
      req.end(payload);
    });
  return { stream, close: () => agent.destroy() };
}
