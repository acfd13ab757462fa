import type { Queryable } from "../db.js";

/** Where an S3 destination writes. */
export interface S3Location {
  bucketName: string;
  prefix: string;
  region: string | null;
  endpointUrl: string | null;
  includeBucketInPrefix: boolean;
}

/** A bulk-export destination row. The sealed credentials never leave the export code. */
export interface DestinationRecord extends S3Location {
  id: string;
  workspaceId: string;
  destinationType: "s3";
  displayName: string;
  /** AES-256-GCM sealed credentials JSON; null for the environment credential chain. */
  credentialsSealed: Uint8Array | null;
  credentialsKeys: string[];
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
}

/** The fields of a new destination: a record without its type (always s3) and timestamps. */
export type NewDestination = Omit<
  DestinationRecord,
  "destinationType" | "createdAt" | "updatedAt" | "deletedAt"
>;

interface DestinationRow {
  id: string;
  workspace_id: string;
  destination_type: "s3";
  display_name: string;
  bucket_name: string;
  prefix: string;
  region: string | null;
  endpoint_url: string | null;
  include_bucket_in_prefix: boolean;
  credentials_sealed: Uint8Array | null;
  credentials_keys: string[];
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

function toRecord(row: DestinationRow): DestinationRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    destinationType: row.destination_type,
    displayName: row.display_name,
    bucketName: row.bucket_name,
    prefix: row.prefix,
    region: row.region,
    endpointUrl: row.endpoint_url,
    includeBucketInPrefix: row.include_bucket_in_prefix,
    credentialsSealed: row.credentials_sealed,
    credentialsKeys: row.credentials_keys,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deletedAt: row.deleted_at,
  };
}

/** Inserts a destination and returns it. */
export async function insertDestination(q: Queryable, d: NewDestination): Promise<DestinationRecord> {
  const [row] = await q<DestinationRow[]>`
    insert into bulk_export_destinations (
      id, workspace_id, destination_type, display_name, bucket_name, prefix, region, endpoint_url,
      include_bucket_in_prefix, credentials_sealed, credentials_keys)
    values (
      ${d.id}, ${d.workspaceId}, 's3', ${d.displayName}, ${d.bucketName}, ${d.prefix}, ${d.region},
      ${d.endpointUrl}, ${d.includeBucketInPrefix}, ${d.credentialsSealed}, ${d.credentialsKeys}::text[])
    returning *`;
  return toRecord(row!);
}

/** A destination of the workspace that is not deleted, or undefined. */
export async function findDestination(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<DestinationRecord | undefined> {
  const [row] = await q<DestinationRow[]>`
    select * from bulk_export_destinations
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null`;
  return row && toRecord(row);
}

/** A destination of the workspace, deleted or not (exports in flight need to tell the two apart). */
export async function findDestinationForExport(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<DestinationRecord | undefined> {
  const [row] = await q<DestinationRow[]>`
    select * from bulk_export_destinations where workspace_id = ${workspaceId} and id = ${id}`;
  return row && toRecord(row);
}

/** The workspace's destinations that are not deleted, newest first. */
export async function listDestinations(q: Queryable, workspaceId: string): Promise<DestinationRecord[]> {
  const rows = await q<DestinationRow[]>`
    select * from bulk_export_destinations
    where workspace_id = ${workspaceId} and deleted_at is null
    order by created_at desc, id desc`;
  return rows.map(toRecord);
}

/** Marks a destination deleted; false when the workspace has no such live destination. */
export async function markDestinationDeleted(
  q: Queryable,
  workspaceId: string,
  id: string,
): Promise<boolean> {
  const rows = await q`
    update bulk_export_destinations set deleted_at = now(), updated_at = now()
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning id`;
  return rows.length > 0;
}

/**
 * Replaces a live destination's credentials; returns it as it is afterwards, or undefined when the
 * workspace has no such live destination.
 */
export async function updateDestinationCredentials(
  q: Queryable,
  workspaceId: string,
  id: string,
  credentials: { sealed: Uint8Array | null; keys: string[] },
): Promise<DestinationRecord | undefined> {
  const [row] = await q<DestinationRow[]>`
    update bulk_export_destinations
    set credentials_sealed = ${credentials.sealed}, credentials_keys = ${credentials.keys}::text[],
      updated_at = now()
    where workspace_id = ${workspaceId} and id = ${id} and deleted_at is null
    returning *`;
  return row && toRecord(row);
}
