import type { SecretBox } from "../store/crypto/secret-box.js";
import type { DestinationRecord } from "../store/export/bulk-export-destination-store.js";
import { DestinationError } from "./destination-error.js";
import type { S3Credentials } from "./s3-destination.js";

/** What a sealed value is bound to: its workspace and destination, so it cannot be moved to another row. */
function context(workspaceId: string, destinationId: string): string {
  return `bulk-export-destination:${workspaceId}:${destinationId}`;
}

/** The credentials sealed for storage in a destination row. */
export function sealCredentials(
  box: SecretBox,
  ids: { workspaceId: string; destinationId: string },
  credentials: S3Credentials,
): Uint8Array {
  return box.seal(JSON.stringify(credentials), context(ids.workspaceId, ids.destinationId));
}

/**
 * A destination's credentials, or undefined when it uses the environment's. Credentials that this
 * process cannot decrypt (sealed under another AGENTPLANE_SECRET_KEY, or damaged) throw a
 * {@link DestinationError}: no retry can read them, only an admin can fix it.
 */
export function openCredentials(box: SecretBox, destination: DestinationRecord): S3Credentials | undefined {
  if (destination.credentialsSealed === null) return undefined;
  let text: string;
  try {
    text = box.open(destination.credentialsSealed, context(destination.workspaceId, destination.id));
  } catch (error) {
    throw new DestinationError(
      "Credentials cannot be decrypted",
      `${error instanceof Error ? error.message : String(error)}; restore the key they were sealed with, or give the destination new credentials (PATCH /api/v1/bulk-exports/destinations/{id})`,
    );
  }
  return JSON.parse(text) as S3Credentials;
}
