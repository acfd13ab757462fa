import { Client } from "langsmith";
import type { TestApp } from "./test-app.js";

/** One request a langsmith Client made: method, path, content-encoding and status. */
export interface SentRequest {
  method: string;
  path: string;
  encoding: string | null;
  status: number;
}

/**
 * An official langsmith `Client` pointed at the test server the way users point it
 * (`LANGSMITH_ENDPOINT=<server>/api/v1`), with the admin key, recording every request it sends.
 */
export function langsmithClient(
  t: TestApp,
  options: { autoBatchTracing?: boolean } = {},
): { client: Client; sent: SentRequest[] } {
  const sent: SentRequest[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    sent.push({
      method: init?.method ?? "GET",
      path: new URL(String(input)).pathname,
      encoding: new Headers(init?.headers).get("content-encoding"),
      status: res.status,
    });
    return res;
  };
  const client = new Client({
    apiUrl: `${t.baseUrl}/api/v1`,
    apiKey: t.adminKey,
    fetchImplementation: recordingFetch,
    ...options,
  });
  return { client, sent };
}
