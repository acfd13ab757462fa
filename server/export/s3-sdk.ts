/** The AWS S3 client module. */
export type S3Sdk = typeof import("@aws-sdk/client-s3");

let loading: Promise<S3Sdk> | undefined;

/**
 * The AWS S3 client module, loaded on first use: loading it takes about a second, which every
 * process start (API processes included) would otherwise pay whether it exports or not.
 */
export function loadS3Sdk(): Promise<S3Sdk> {
  loading ??= import("@aws-sdk/client-s3");
  return loading;
}
