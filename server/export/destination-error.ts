import { EndpointRefused } from "../net/endpoint-policy.js";

/**
 * What is wrong with a destination, in the seed's words. An export run that meets one of these
 * fails at once (no retry: only the user can fix it); destination creation answers it as a 4xx.
 */
export type DestinationProblem =
  | "Access denied"
  | "Bucket is not valid"
  | "Key ID you provided does not exist"
  | "Invalid endpoint"
  | "Destination was deleted"
  | "Credentials cannot be decrypted"
  | "File check failed";

/** How far down an error's `cause` chain a refusal is looked for (the SDK wraps at most twice). */
const MAX_CAUSE_DEPTH = 4;

/** A destination that cannot be written to until its owner fixes it. */
export class DestinationError extends Error {
  constructor(
    readonly problem: DestinationProblem,
    readonly detail: string,
  ) {
    super(`${problem}: ${detail}`);
    this.name = "DestinationError";
  }
}

/** The S3 error codes that mean the credentials or their permissions are wrong. */
const ACCESS_DENIED = new Set([
  "AccessDenied",
  "SignatureDoesNotMatch",
  "AllAccessDisabled",
  "InvalidToken",
  "ExpiredToken",
  "TokenRefreshRequired",
  "AccountProblem",
  "InvalidSecurity",
  "CredentialsProviderError",
]);
/** The S3 error codes that mean the bucket is missing, misnamed or elsewhere. */
const BAD_BUCKET = new Set([
  "NoSuchBucket",
  "InvalidBucketName",
  "PermanentRedirect",
  "AuthorizationHeaderMalformed",
  "IllegalLocationConstraintException",
  "InvalidBucketState",
]);
/** Network failures that, when validating a new destination, mean the endpoint is not reachable. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ECONNRESET",
  "ETIMEDOUT",
]);

/**
 * The `<Code>` of an S3 error document the store answered with; undefined when the answer was not
 * one (a web page, JSON, an empty body: the SDK still names such errors by their status, as
 * `NotFound` or `Unknown`, so the name alone does not tell S3 from something else).
 */
export function s3ErrorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { Code?: unknown }).Code;
  return typeof code === "string" && code !== "" ? code : undefined;
}

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

/**
 * The destination problem an S3 client error reveals, or undefined for errors worth retrying
 * (throttling, 5xx, network trouble while exporting). With `validating`, network and protocol
 * failures count as "Invalid endpoint": a new destination that cannot be reached is the user's to fix.
 */
export function destinationProblemOf(error: unknown, validating = false): DestinationError | undefined {
  if (error instanceof DestinationError) return error;
  if (typeof error !== "object" || error === null) return undefined;
  // The endpoint policy refused the address: the destination's to fix, whenever it is met.
  const refused = refusedEndpoint(error);
  if (refused) return new DestinationError("Invalid endpoint", refused.message);
  const e = error as SdkErrorShape;
  const name = typeof e.name === "string" ? e.name : "";
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : String(error);
  const status = typeof e.$metadata?.httpStatusCode === "number" ? e.$metadata.httpStatusCode : undefined;
  if (name === "InvalidAccessKeyId")
    return new DestinationError("Key ID you provided does not exist", message);
  if (ACCESS_DENIED.has(name)) return new DestinationError("Access denied", message);
  if (BAD_BUCKET.has(name)) return new DestinationError("Bucket is not valid", message);
  // Only an answer that parsed as an S3 error document says something about the bucket by its
  // status; one that did not (HTML, JSON, an empty body) comes from something that is not S3.
  const s3Answer = s3ErrorCode(error) !== undefined;
  if (s3Answer) {
    if (status === 403) return new DestinationError("Access denied", message);
    if (status === 404 || status === 301) return new DestinationError("Bucket is not valid", message);
  }
  if (!validating) return undefined;
  if (UNREACHABLE.has(code) || name === "TimeoutError" || name === "RequestTimeout")
    return new DestinationError("Invalid endpoint", `cannot reach the endpoint (${code || name})`);
  // Anything else while validating, short of a server error (a gateway's 502 is worth a retry
  // whatever its body): the endpoint answered something that is not S3.
  if (status === undefined || status < 500)
    return new DestinationError(
      "Invalid endpoint",
      "the endpoint does not answer like an S3-compatible store",
    );
  return undefined;
}

/** The endpoint policy's refusal in `error` or its causes. */
function refusedEndpoint(error: object): EndpointRefused | undefined {
  let at: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && typeof at === "object" && at !== null; depth++) {
    if (at instanceof EndpointRefused) return at;
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}
