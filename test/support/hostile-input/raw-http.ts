import net from "node:net";

/**
 * One HTTP/1.1 request written byte for byte over its own TCP connection, so that nothing a client
 * library normalises (request targets, percent-escapes, lengths, header bytes) stands between the
 * fuzz test and the server.
 */
export interface RawRequest {
  /** What is malformed, for the failure report. */
  readonly label: string;
  readonly method: string;
  /** The request target exactly as sent. */
  readonly target: string;
  /** Extra headers; Connection and Content-Length are written by {@link sendRaw}, Host unless given. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Buffer | string;
  /** Overrides the request line (protocol version or a broken line). */
  readonly requestLine?: string;
  /** A Content-Length other than the body's (a lie), or null to send none. */
  readonly contentLength?: number | null;
}

/** How the server answered a {@link RawRequest}. */
export type RawOutcome =
  | { readonly kind: "answered"; readonly status: number; readonly head: string; readonly body: string }
  | { readonly kind: "reset"; readonly detail: string }
  | { readonly kind: "closed"; readonly received: string }
  | { readonly kind: "timeout" };

/** The most of a response body kept for a failure report. */
const KEPT_BODY_CHARS = 300;

/** Renders a request for a failure report: request line, headers and a shortened, escaped body. */
export function describeRaw(request: RawRequest): string {
  const body = request.body === undefined ? "" : Buffer.from(request.body).toString("latin1");
  const shown = JSON.stringify(body.length > 400 ? `${body.slice(0, 400)}… (${body.length} bytes)` : body);
  const headers = Object.entries(request.headers ?? {})
    .map(([name, value]) => `${name}: ${JSON.stringify(value)}`)
    .join("; ");
  const line = request.requestLine ?? `${request.method} ${request.target} HTTP/1.1`;
  return `[${request.label}] ${JSON.stringify(line)}${headers ? ` {${headers}}` : ""}${body ? ` body=${shown}` : ""}`;
}

/** The bytes of a request: `Connection: close`, so the answer ends with the connection. */
export function encodeRaw(request: RawRequest): Buffer {
  const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body);
  const lines = [request.requestLine ?? `${request.method} ${request.target} HTTP/1.1`];
  const hasHost = Object.keys(request.headers ?? {}).some((name) => name.toLowerCase() === "host");
  if (!hasHost) lines.push("Host: 127.0.0.1");
  lines.push("Connection: close");
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`${name}: ${value}`);
  const length = request.contentLength === undefined ? body.length : request.contentLength;
  if (length !== null) lines.push(`Content-Length: ${length}`);
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), body]);
}

/**
 * Sends a request and reads the answer until the server closes the connection, or until the head
 * of a Server-Sent Events stream has arrived (the stream itself may last as long as a run).
 */
export function sendRaw(port: number, request: RawRequest, timeoutMs: number): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (outcome: RawOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const received = (): string => Buffer.concat(chunks).toString("latin1");
    const answered = (): RawOutcome | undefined => {
      const text = received();
      const end = text.indexOf("\r\n\r\n");
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (end < 0 || !status) return undefined;
      return {
        kind: "answered",
        status: Number(status[1]),
        head: text.slice(0, end),
        body: text.slice(end + 4, end + 4 + KEPT_BODY_CHARS),
      };
    };
    const timer = setTimeout(() => finish(answered() ?? { kind: "timeout" }), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      // A stream (SSE) that started is an answer: the rest of it may last as long as a run does.
      const outcome = answered();
      if (outcome?.kind === "answered" && /^content-type:\s*text\/event-stream/im.test(outcome.head))
        finish(outcome);
    });
    socket.on("end", () => finish(answered() ?? { kind: "closed", received: received().slice(0, 200) }));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A reset after a complete answer was read costs the client nothing; before it, the answer is lost.
      finish(answered() ?? { kind: "reset", detail: error.code ?? error.message });
    });
    socket.write(encodeRaw(request));
  });
}
