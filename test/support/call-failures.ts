import { ConnectError } from "@connectrpc/connect";

/**
 * The HTTP status and `detail` of a call of the official LangGraph SDK that must fail. The SDK
 * throws `Error("HTTP <status>: <body>")` with a `status` property; the body is our `{"detail"}`.
 */
export async function langGraphFailure(call: Promise<unknown>): Promise<{ status: number; detail: string }> {
  const error = (await call.then(
    () => undefined,
    (e: unknown) => e,
  )) as { status?: number; message?: string } | undefined;
  if (!error) throw new Error("expected the call to fail");
  const body = String(error.message).replace(/^HTTP \d+: /, "");
  return { status: error.status ?? 0, detail: (JSON.parse(body) as { detail: string }).detail };
}

/** The `ConnectError` of a Connect call that must fail. */
export async function connectFailure(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}
