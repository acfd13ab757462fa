import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { addressProblem, type EndpointPolicy, EndpointRefused, guardedLookup } from "./endpoint-policy.js";

/** One POST of a webhook. */
export interface WebhookCall {
  url: string;
  /** The JSON text to send. */
  body: string;
  /** Headers besides content type and length. */
  headers: Readonly<Record<string, string>>;
  /** The whole call (connect, send, answer headers) must end within this. */
  timeoutMs: number;
  /** Which addresses the call may connect to. */
  policy: EndpointPolicy;
  /** Stops the call (the job is stopping). */
  signal: AbortSignal;
}

/** Thrown when the receiver did not answer within the call's timeout. */
export class WebhookTimeout extends Error {
  constructor(timeoutMs: number) {
    super(`the receiver did not answer within ${timeoutMs} ms`);
    this.name = "WebhookTimeout";
  }
}

/**
 * POSTs a webhook and answers the receiver's status code once its headers arrive (the body is read
 * and dropped). Redirects are not followed: a redirect could lead the server anywhere, past the
 * address policy checked for the URL. Every connection goes through the policy: an IP literal is
 * checked here, a name when it is resolved, so a refused address throws {@link EndpointRefused}.
 * Network errors and a timeout ({@link WebhookTimeout}) throw.
 */
export function postWebhook(call: WebhookCall): Promise<number> {
  const target = new URL(call.url);
  const literal = addressProblem(target.hostname, call.policy);
  if (literal) return Promise.reject(new EndpointRefused(literal));
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = send(
      target,
      {
        method: "POST",
        headers: {
          "user-agent": "agentplane-webhook",
          ...call.headers,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(call.body),
        },
        lookup: guardedLookup(call.policy),
        // A fresh connection per call, so every call resolves (and checks) the name again.
        agent: false,
        signal: call.signal,
      },
      (res) => {
        clearTimeout(timer);
        // The status is the answer: the body is drained unread, and a connection that breaks
        // while draining it changes nothing.
        res.resume();
        res.on("error", () => {});
        resolve(res.statusCode ?? 0);
      },
    );
    const timer = setTimeout(() => req.destroy(new WebhookTimeout(call.timeoutMs)), call.timeoutMs);
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(call.body);
  });
}
