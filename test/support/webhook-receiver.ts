import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One call the receiver got. */
export interface ReceivedCall {
  path: string;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: a webhook body is whatever the server sent
  body: any;
  /** What the receiver answered: a status, or "hold" (it never answered). */
  answer: number | "hold";
}

/** How the receiver answers the next calls to a path, in order; once used up it answers 200. */
export type Answer = number | "hold";

/** A local HTTP server standing in for a webhook receiver. */
export interface WebhookReceiver {
  /** `http://127.0.0.1:<port><path>`. */
  url(path: string): string;
  /** Scripts the answers to the next calls to `path`. */
  script(path: string, answers: Answer[]): void;
  /** The calls to `path` so far (all calls without a path). */
  calls(path?: string): ReceivedCall[];
  /** Resolves once `path` had `count` calls; throws after `timeoutMs`. */
  waitForCalls(path: string, count: number, timeoutMs?: number): Promise<ReceivedCall[]>;
  close(): Promise<void>;
}

/** Starts a receiver on a loopback port. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedCall[] = [];
  const scripts = new Map<string, Answer[]>();
  const held: ServerResponse[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      const answer = scripts.get(path)?.shift() ?? 200;
      const text = Buffer.concat(chunks).toString();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Kept as text: the test sees what was sent.
      }
      received.push({ path, headers: req.headers, body, answer });
      for (const wake of waiters) wake();
      if (answer === "hold") held.push(res);
      else res.writeHead(answer, { "content-type": "text/plain" }).end(String(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const calls = (path?: string) => received.filter((c) => path === undefined || c.path === path);
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    script: (path, answers) => scripts.set(path, [...answers]),
    calls,
    waitForCalls(path, count, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (calls(path).length < count) return;
          cleanup();
          resolve(calls(path));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${path} had ${calls(path).length} calls, not ${count}, within ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
