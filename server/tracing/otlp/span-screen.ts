/**
 * How the OTLP mapping judges what it is about to store, span by span: a span holding a value that
 * cannot be stored (the NUL character or a lone surrogate in a string, or in the JSON a text
 * attribute holds, a number beyond a double's range or nesting past the limit) is refused by itself,
 * in its export's partial success, and the export's other spans are stored. The screens are the
 * decoding layer's (transport/input); the caller hands them down, as imports run from the transport
 * to this layer and not back.
 */
import type { JsonTexts } from "../../store/json-text.js";

/** The decoding layer's screens, as the mapping calls them. */
export interface SpanScreen {
  /** Why `text` cannot be stored, or undefined when it can. */
  text(text: string): string | undefined;
  /**
   * Why `value`, which `JSON.parse` made from `text` (itself already screened by {@link text}),
   * cannot be stored, or undefined when it can.
   */
  json(value: unknown, text: string): string | undefined;
}

/** What the mapping of one export needs beyond its spans. */
export interface SpanReading {
  readonly screen: SpanScreen;
  /**
   * The project of spans that name none: the request's (its headers'), kept with the span even
   * when it waits for a parent sent in a later request.
   */
  readonly defaultProject: string;
  /**
   * Where the JSON texts that attributes held are kept beside the objects parsed from them, so that
   * the runs' documents are written as those texts (store/json-text.ts).
   */
  readonly texts: JsonTexts;
}

/** A value of a span that cannot be stored: thrown while the span is mapped, and refuses that span. */
export class UnstorableSpanValue extends Error {
  override readonly name = "UnstorableSpanValue";

  /** `where` names the value (`attribute "input.value"`), `problem` says what is wrong with it. */
  constructor(where: string, problem: string) {
    super(`${where} ${problem}`);
  }
}

/**
 * `text`, or {@link UnstorableSpanValue} when it cannot be stored: `where` names it, with `key` after
 * it when given (`attribute "input.value"`), put together only then.
 */
export function screenedText(screen: SpanScreen, text: string, where: string, key?: string): string {
  const problem = screen.text(text);
  if (problem !== undefined)
    throw new UnstorableSpanValue(key === undefined ? where : `${where} ${JSON.stringify(key)}`, problem);
  return text;
}
