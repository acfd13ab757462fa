/**
 * The body of `GET /api/v1/info`, which the `langsmith` SDKs read before their first flush. The SDKs
 * act on `batch_ingest_config` (multipart or batch endpoint, batch limits) and `instance_flags`
 * (`gzip_body_enabled` makes the JS SDK gzip its multipart stream, which we decode).
 */
export interface ServerInfo {
  version: string;
  license_expiration_time: null;
  batch_ingest_config: {
    use_multipart_endpoint: boolean;
    scale_up_qsize_trigger: number;
    scale_up_nthreads_limit: number;
    scale_down_nempty_trigger: number;
    size_limit: number;
    size_limit_bytes: number;
  };
  instance_flags: Record<string, boolean>;
  customer_info: null;
}

/**
 * Largest batch the SDKs should send, in bytes: LangSmith's default (20 MiB), below the 32 MiB an
 * ingest request may carry, which leaves room for the SDK's estimate being low and for a single run
 * larger than the batch limit (the SDK sends those alone).
 */
const SIZE_LIMIT_BYTES = 20 * 1024 * 1024;

/** The server info; `version` is agentplane's. Values other than the flags are LangSmith's defaults. */
export function serverInfo(version: string): ServerInfo {
  return {
    version,
    license_expiration_time: null,
    batch_ingest_config: {
      use_multipart_endpoint: true,
      scale_up_qsize_trigger: 1000,
      scale_up_nthreads_limit: 16,
      scale_down_nempty_trigger: 4,
      size_limit: 100,
      size_limit_bytes: SIZE_LIMIT_BYTES,
    },
    instance_flags: {
      gzip_body_enabled: true,
      // The Python SDK's zstd bodies need Node's zstd (22.15+); we run on Node 20.
      zstd_compression_enabled: false,
      dataset_examples_multipart_enabled: false,
      examples_multipart_enabled: false,
    },
    customer_info: null,
  };
}
