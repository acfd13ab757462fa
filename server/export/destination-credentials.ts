import type { DestinationRecord } from "../store/bulk-export-destination-store.js";
import type { S3Credentials } from "./s3-destination.js";
import type { SecretBox } from "./secret-box.js";

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

/** A destination's credentials, or undefined when it uses the environment's. */
export function openCredentials(box: SecretBox, destination: DestinationRecord): S3Credentials | undefined {
  if (destination.credentialsSealed === null) return undefined;
  return JSON.parse(
    box.open(destination.credentialsSealed, context(destination.workspaceId, destination.id)),
  ) as S3Credentials;
}
