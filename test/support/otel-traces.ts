import { Metadata } from "@grpc/grpc-js";
import { type Attributes, context, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { OTLPTraceExporter as GrpcExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPTraceExporter as HttpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";

/** The official OTLP exporters, by protocol. */
export type OtlpProtocol = "http/protobuf" | "http/json" | "grpc";

/** How a test sends spans: a tracer on a provider whose exporter points at the server. */
export interface OtelSender {
  tracer: Tracer;
  /** Exports what is pending and shuts the provider down. */
  close(): Promise<void>;
}

/**
 * A tracer provider with the official exporter of `protocol` pointed at `baseUrl` (`path` for the
 * HTTP ones), sending `headers` (as gRPC metadata over gRPC). `simple` exports each span when it
 * ends, so a trace's children reach the server before their parent, in requests of their own.
 */
export function otelSender(options: {
  baseUrl: string;
  protocol: OtlpProtocol;
  headers: Record<string, string>;
  path?: string;
  simple?: boolean;
  compression?: "gzip" | "none";
}): OtelSender {
  const { baseUrl, protocol, headers } = options;
  const url = `${baseUrl}${options.path ?? "/otel/v1/traces"}`;
  const compression = options.compression ?? "none";
  let exporter: SpanExporter;
  if (protocol === "grpc") {
    const metadata = new Metadata();
    for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
    exporter = new GrpcExporter({ url: baseUrl, metadata, compression: compression as never });
  } else if (protocol === "http/json") {
    exporter = new HttpJsonExporter({ url, headers, compression: compression as never });
  } else {
    exporter = new ProtoExporter({ url, headers, compression: compression as never });
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": "otlp-test", "deployment.environment": "test" }),
    spanProcessors: [options.simple ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  return {
    tracer: provider.getTracer("agentplane-tests", "1.0.0"),
    close: async () => {
      await provider.forceFlush();
      await provider.shutdown();
    },
  };
}

/** Ids (32 and 16 hex digits) of the spans {@link sendAgentTrace} sent. */
export interface SentSpans {
  traceId: string;
  chain: string;
  llm: string;
  tool: string;
}

/**
 * One agent turn as GenAI instrumentation records it: a chain span with an llm child (GenAI
 * semantic-convention attributes: provider, model, token usage, the older indexed prompt and
 * completion form) and a tool child that fails with an exception. The children end before the
 * chain, as in any real run.
 */
export async function sendAgentTrace(tracer: Tracer, question: string): Promise<SentSpans> {
  return tracer.startActiveSpan("agent", { attributes: chainAttributes(question) }, async (chain) => {
    const parent = trace.setSpan(context.active(), chain);
    const llm = tracer.startSpan(
      "chat gpt-4o-mini",
      {
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.system": "openai",
          "gen_ai.request.model": "gpt-4o-mini",
          "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
          "gen_ai.request.temperature": 0.2,
          "gen_ai.usage.input_tokens": 7,
          "gen_ai.usage.output_tokens": 5,
          "gen_ai.prompt.0.role": "user",
          "gen_ai.prompt.0.content": question,
          "gen_ai.completion.0.role": "assistant",
          "gen_ai.completion.0.content": "call the weather tool",
          "http.response.status_code": 200,
        },
      },
      parent,
    );
    llm.end();
    const tool = tracer.startSpan(
      "get_weather",
      {
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "get_weather",
          "gen_ai.tool.call.arguments": JSON.stringify({ city: "Paris" }),
        },
      },
      parent,
    );
    tool.recordException(new TypeError("weather service down"));
    tool.setStatus({ code: SpanStatusCode.ERROR, message: "weather service down" });
    tool.end();
    chain.setAttribute("langsmith.metadata.turn", "1");
    chain.setStatus({ code: SpanStatusCode.OK });
    chain.end();
    return {
      traceId: chain.spanContext().traceId,
      chain: chain.spanContext().spanId,
      llm: llm.spanContext().spanId,
      tool: tool.spanContext().spanId,
    };
  });
}

function chainAttributes(question: string): Attributes {
  return {
    "langsmith.span.kind": "chain",
    "langsmith.span.tags": "otel,agent",
    "langsmith.metadata.user": "u-1",
    "gen_ai.prompt": JSON.stringify({ question }),
    "gen_ai.completion": JSON.stringify({ answer: "no weather today" }),
  };
}

/**
 * An OpenInference-instrumented retrieval-augmented call (as Phoenix and its instrumentations
 * write it): a CHAIN with an LLM child that reports `llm.token_count.*` and messages.
 */
export async function sendOpenInferenceTrace(tracer: Tracer): Promise<SentSpans> {
  return tracer.startActiveSpan(
    "rag",
    {
      attributes: {
        "openinference.span.kind": "CHAIN",
        "input.value": JSON.stringify({ query: "what is OTLP?" }),
        "input.mime_type": "application/json",
        "output.value": "a protocol",
        "session.id": "session-7",
        metadata: JSON.stringify({ team: "search" }),
        "tag.tags": ["rag", "prod"],
      },
    },
    async (chain) => {
      const parent = trace.setSpan(context.active(), chain);
      const llm = tracer.startSpan(
        "ChatModel",
        {
          attributes: {
            "openinference.span.kind": "LLM",
            "llm.model_name": "claude-sonnet",
            "llm.provider": "anthropic",
            "llm.token_count.prompt": 11,
            "llm.token_count.completion": 4,
            "llm.token_count.total": 15,
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "be brief",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "what is OTLP?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "a protocol",
            "llm.invocation_parameters": JSON.stringify({ temperature: 0 }),
          },
        },
        parent,
      );
      llm.end();
      chain.end();
      return {
        traceId: chain.spanContext().traceId,
        chain: chain.spanContext().spanId,
        llm: llm.spanContext().spanId,
        tool: "",
      };
    },
  );
}

/** A span id's run id, as LangSmith derives it. */
export function runIdOf(spanId: string): string {
  return `00000000-0000-0000-${spanId.slice(0, 4)}-${spanId.slice(4)}`;
}
