/**
 * The decoding layer's screens as the OTLP mapping takes them (tracing/otlp/span-screen.ts): the
 * checks every request goes through (input/), applied span by span, so that a span holding what
 * cannot be stored is refused by itself instead of failing its whole export.
 */
import type { SpanScreen } from "../../tracing/otlp/span-screen.js";
import { describeProblem, textProblem } from "../input/input-problem.js";
import { findDecodedJsonProblem } from "../input/json-screen.js";

/** The screens of OTLP spans. */
export const otlpSpanScreen: SpanScreen = {
  text: textProblem,
  json(value, text) {
    // The text passed `text` (no NUL, no lone surrogate): only what its escapes and numbers make.
    const problem = findDecodedJsonProblem(value, text);
    return problem && describeProblem(problem, "", "its JSON");
  },
};
