import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { IdentityCache } from "./identity-cache.js";

/** Methods that only read (`listApiKeys`, `getWorkspace`, …) change nothing authentication depends on. */
const READ_ONLY_METHOD = /^(list|get)[A-Z]/;

type UnaryMethod = (...args: unknown[]) => Promise<unknown>;

/**
 * `impl` (an IAM service with unary methods only) with every method that may change keys,
 * memberships or workspaces followed by clearing `identities`, so that this process's very next
 * request sees the change; other processes learn of it by NOTIFY a moment later. It clears whether
 * the call succeeded or not, since a call may fail after its transaction committed.
 */
export function clearingIdentitiesAfterWrites<S extends DescService>(
  impl: ServiceImpl<S>,
  identities: Pick<IdentityCache<unknown>, "clear">,
): ServiceImpl<S> {
  const wrapped: Record<string, UnaryMethod> = {};
  for (const [name, method] of Object.entries(impl as Record<string, UnaryMethod>)) {
    wrapped[name] = READ_ONLY_METHOD.test(name)
      ? method
      : async (...args) => {
          try {
            return await method(...args);
          } finally {
            identities.clear();
          }
        };
  }
  return wrapped as ServiceImpl<S>;
}
