import { Agent, type OutgoingHttpHeaders, request } from "node:http";

/** An answer: the status and the parsed body (undefined for an empty or non-JSON body, as with a 204). */
export interface JsonAnswer {
  status: number;
  json: unknown;
  /** The raw body, for error messages. */
  text: string;
}

/** One keep-alive HTTP/1.1 client to one server: the same client code is used for every server. */
export interface JsonClient {
  send(method: string, path: string, body?: unknown): Promise<JsonAnswer>;
  /** Sends `body` as it is, with `headers` (its content type and encoding) and its content-length. */
  sendBytes(method: string, path: string, body: Buffer, headers: OutgoingHttpHeaders): Promise<JsonAnswer>;
  close(): void;
}

/** `text` parsed, or undefined when it is empty or not JSON (error bodies may be plain text). */
function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A node:http client over a keep-alive Agent with `maxSockets` connections to 127.0.0.1:`port`,
 * sending `headers` with every request and bodies with their content-length.
 */
export function createJsonClient(port: number, headers: OutgoingHttpHeaders, maxSockets: number): JsonClient {
  const agent = new Agent({ keepAlive: true, maxSockets });
  const exchange = (
    method: string,
    path: string,
    payload?: string | Buffer,
    bodyHeaders?: OutgoingHttpHeaders,
  ) =>
    new Promise<JsonAnswer>((done, fail) => {
      const req = request(
        {
          agent,
          host: "127.0.0.1",
          port,
          method,
          path,
          headers:
            payload === undefined
              ? headers
              : { ...headers, ...bodyHeaders, "content-length": Buffer.byteLength(payload) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            text += chunk;
          });
          res.on("error", fail);
          res.on("end", () => done({ status: res.statusCode ?? 0, json: parseJson(text), text }));
        },
      );
      req.on("error", fail);
      req.end(payload);
    });
  return {
    send: (method, path, body) =>
      body === undefined
        ? exchange(method, path)
        : exchange(method, path, JSON.stringify(body), { "content-type": "application/json" }),
    sendBytes: exchange,
    close: () => agent.destroy(),
  };
}
