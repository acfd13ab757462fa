import type { WorkspaceRecord } from "../../store/iam/workspace-store.js";
import type { Principal } from "./principal.js";

/**
 * A workspace read together with the key: the id the lookup asked for, and the workspace when the
 * caller reaches it (undefined when it is deleted, in another organization or not granted).
 */
export interface PrefetchedWorkspace {
  workspaceId: string;
  workspace: WorkspaceRecord | undefined;
}

/** Who a credential belongs to, before a workspace is chosen. */
export type Identity = Omit<Principal, "workspace" | "authUser" | "authRules"> & {
  defaultWorkspaceId: string | null;
  /** The workspace read with the key, so choosing it needs no second query; null when none was read. */
  prefetched: PrefetchedWorkspace | null;
};
