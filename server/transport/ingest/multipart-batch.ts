import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import { JsonTexts } from "../../store/json-text.js";
import type { RunAttachment } from "../../store/tracing/run-store.js";
import type { IngestBatch } from "../../tracing/ingest-service.js";
import type { FeedbackInput, RunInput } from "../../tracing/run-normalizer.js";
import { describeProblem, textProblem } from "../input/input-problem.js";
import { findDecodedJsonProblem } from "../input/json-screen.js";
import { malformedRequestError } from "../rest/http-status.js";
import type { MultipartPart } from "./multipart-parser.js";

/** Fields of a run the SDKs send as parts of their own (`post.<id>.<field>`), JSON each. */
const RUN_FIELDS = new Set(["inputs", "outputs", "events", "extra", "error", "serialized"]);

const PART_NAMES =
  "post.<run id>[.<field>], patch.<run id>[.<field>], feedback.<id> or attachment.<run id>.<name>";

/**
 * Assembles the parts of a `POST /runs/multipart` body into an ingest batch: `post.<id>` and
 * `patch.<id>` hold a run without its large fields, which follow as `post.<id>.inputs` and so on;
 * `feedback.<id>` is a feedback item; `attachment.<run id>.<name>` raw bytes. Every part needs a
 * Content-Type and a declared length, and no part may have its own Content-Encoding (compress the
 * whole request instead), as LangSmith requires. Part names, content types and JSON parts go through
 * the same input screen as every other request (no NUL, no lone surrogates, bounded nesting).
 */
export function batchFromParts(parts: readonly MultipartPart[]): IngestBatch {
  const runs = { post: new Map<string, RunDraft>(), patch: new Map<string, RunDraft>() };
  const feedback: FeedbackInput[] = [];
  const attachments: RunAttachment[] = [];
  const texts = new JsonTexts();
  for (const part of parts) {
    checkHeaders(part);
    const { event, id, field } = splitName(part.name);
    if (event === "post" || event === "patch") {
      const drafts = runs[event];
      // The SDKs send a run's parts one after another under the same id: validated once.
      let draft = drafts.get(id);
      if (draft === undefined) {
        const runId = requireUuid(id, part.name);
        draft = drafts.get(runId) ?? { main: {}, fields: {} };
        drafts.set(runId, draft);
        if (runId !== id) drafts.set(id, draft);
      }
      if (field === "") {
        const value = parseJson(part);
        if (typeof value !== "object" || value === null || Array.isArray(value))
          throw invalid(`part "${part.name}" must hold a JSON object`);
        draft.main = value as RunInput;
      } else if (RUN_FIELDS.has(field)) {
        draft.fields[field] = parseJson(part, texts);
      } else {
        throw invalid(
          `part "${part.name}": unknown run field "${field}"; fields are ${[...RUN_FIELDS].join(", ")}`,
        );
      }
    } else if (event === "feedback" && field === "") {
      const value = parseJson(part);
      if (typeof value !== "object" || value === null || Array.isArray(value))
        throw invalid(`part "${part.name}" must hold a JSON object`);
      feedback.push({ id: requireUuid(id, part.name), ...(value as FeedbackInput) });
    } else if (event === "attachment" && field !== "") {
      attachments.push({
        runId: requireUuid(id, part.name),
        name: field,
        contentType: part.contentType.replace(/;\s*length=[^;]*/i, "").trim(),
        data: part.data,
      });
    } else {
      throw invalid(`unknown part "${part.name}": part names are ${PART_NAMES}`);
    }
  }
  const assemble = (drafts: Map<string, RunDraft>): RunInput[] => {
    const assembled: RunInput[] = [];
    for (const [id, d] of drafts) {
      // A draft is listed once more under the id as sent when that was not in lower case.
      if (d.assembled) continue;
      d.assembled = true;
      // The main part's object is this batch's own (parsed here), so its fields are added in place.
      assembled.push(Object.assign(d.main, d.fields, { id: id.toLowerCase() }));
    }
    return assembled;
  };
  return { post: assemble(runs.post), patch: assemble(runs.patch), feedback, attachments, texts };
}

interface RunDraft {
  main: RunInput;
  fields: Record<string, unknown>;
  assembled?: boolean;
}

/** `<event>.<id>[.<field>]`: the field may hold dots of its own (attachment names do). */
function splitName(name: string): { event: string; id: string; field: string } {
  const first = name.indexOf(".");
  if (first === -1) return { event: name, id: "", field: "" };
  const second = name.indexOf(".", first + 1);
  return second === -1
    ? { event: name.slice(0, first), id: name.slice(first + 1), field: "" }
    : { event: name.slice(0, first), id: name.slice(first + 1, second), field: name.slice(second + 1) };
}

function checkHeaders(part: MultipartPart): void {
  const nameProblem = textProblem(part.name);
  if (nameProblem) throw invalid(`part name ${JSON.stringify(part.name)} ${nameProblem}`);
  const typeProblem = textProblem(part.contentType);
  if (typeProblem) throw invalid(`the Content-Type of part ${JSON.stringify(part.name)} ${typeProblem}`);
  if (part.headers.has("content-encoding")) {
    throw invalid(
      `part "${part.name}" has its own Content-Encoding, which is not supported: compress the whole request instead`,
    );
  }
  if (part.contentType === "" || part.declaredLength === null) {
    throw invalid(
      `part "${part.name}" needs a Content-Type header and a length: a length=<bytes> parameter of its Content-Type or a Content-Length header`,
    );
  }
}

function requireUuid(id: string, name: string): string {
  if (!isUuid(id)) throw invalid(`part "${name}": "${id}" is not a UUID; part names are ${PART_NAMES}`);
  return id.toLowerCase();
}

/**
 * The JSON value of a part, screened. With `texts`, an object or array keeps the text it was parsed
 * from (store/json-text.ts), so that the store sends that text rather than a serialization.
 */
function parseJson(part: MultipartPart, texts?: JsonTexts): unknown {
  const text = part.text ?? part.data.toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw malformedRequestError(`part "${part.name}" is not valid JSON: ${(error as Error).message}`);
  }
  const problem = findDecodedJsonProblem(value, text);
  if (problem) throw invalid(`part "${part.name}": ${describeProblem(problem, "", "its value")}`);
  if (texts && typeof value === "object" && value !== null) texts.remember(value, text);
  return value;
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}
