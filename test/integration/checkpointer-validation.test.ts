import { type CheckpointSaverTestInitializer, validate } from "@langchain/langgraph-checkpoint-validation";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { PostgresCheckpointer } from "../../server/runtime/postgres-checkpointer.js";
import { insertOrganization } from "../../server/store/iam/organization-store.js";
import { insertWorkspace } from "../../server/store/iam/workspace-store.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

// The official suite calls vitest's functions as globals; this project does not enable globals.
Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it });

let database: TestDatabase | undefined;
let organizationId = "";
const workspaceOf = new WeakMap<PostgresCheckpointer, string>();

function sql() {
  if (!database) throw new Error("the test database exists only once the suite's beforeAll has run");
  return database.sql;
}

/**
 * Each checkpointer the suite asks for gets a workspace of its own, which isolates its state as the
 * suite requires; destroying it deletes the workspace, and with it (cascade) everything it stored.
 */
const initializer: CheckpointSaverTestInitializer<PostgresCheckpointer> = {
  checkpointerName: "agentplane PostgresCheckpointer",
  // Cloning the template database and opening a pool; well under the suite's 10 s default.
  beforeAllTimeout: 30_000,
  async beforeAll() {
    database = await createTestDatabase();
    organizationId = uuidv7();
    await insertOrganization(sql(), { id: organizationId, displayName: "validation", plan: "enterprise" });
  },
  async afterAll() {
    await database?.drop();
  },
  async createCheckpointer() {
    const workspaceId = uuidv7();
    await insertWorkspace(sql(), {
      id: workspaceId,
      organizationId,
      displayName: "validation",
      tenantHandle: `validation-${workspaceId}`,
      isPersonal: false,
    });
    const checkpointer = new PostgresCheckpointer(sql(), workspaceId);
    workspaceOf.set(checkpointer, workspaceId);
    return checkpointer;
  },
  async destroyCheckpointer(checkpointer) {
    await sql()`delete from workspaces where id = ${workspaceOf.get(checkpointer) ?? null}`;
  },
};

validate(initializer);
