/**
 * The body of `GET /api/v1/info`, which the `langsmith` SDKs read before their first flush. The SDKs
 * act on `batch_ingest_config` (multipart or batch endpoint, batch limits) and `instance_flags`
 * (`gzip_body_enabled` and `zstd_compression_enabled` make the SDKs compress their multipart
 * bodies, gzip or zstd, which we decode).
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

/**
 * The LangSmith API version whose surface agentplane serves for the SDK's tracing methods: the
 * `langsmith` SDK (0.10.5) warns at start when the backend reports less than 0.16.0 for its v2
 * resources (runs, traces, threads). Only reported to clients; agentplane's own version is on
 * SystemService.
 */
export const LANGSMITH_API_VERSION = "0.16.0";

/**
 * The server info. Values other than the flags are LangSmith's defaults; the flags say which
 * optional features we serve (gzip and zstd bodies) and which we do not.
 */
export function serverInfo(): ServerInfo {
  return {
    version: LANGSMITH_API_VERSION,
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
      // langsmith 0.12 (JS on Node 22.15+, where zlib has zstd) and the Python SDK then send zstd.
      zstd_compression_enabled: true,
      dataset_examples_multipart_enabled: false,
      examples_multipart_enabled: false,
    },
    customer_info: null,
  };
}
