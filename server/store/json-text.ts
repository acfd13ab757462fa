/**
 * The JSON text parsed objects came from, kept beside them for one request, so that a writer can
 * send that text to Postgres as it arrived instead of stringifying the object again. Trace ingest
 * parses each multipart part (to validate it and read token usage from it) and then writes the same
 * documents as `jsonb`: for inputs, outputs and extra, the bulk of a run, the second serialization
 * was a fifth of the server's CPU per run.
 *
 * One registry per request, dropped with it: a process-wide WeakMap did the same, but its entries
 * cost about three times the parse of the documents themselves (bench:ingest's shape, 400 parts).
 *
 * Only text the registering code has validated belongs here: text that `JSON.parse` accepted and
 * whose parsed value passed the input screen (so it holds no NUL, no lone surrogate, no number that
 * parses to infinity). The object must not be changed afterwards: the text would no longer match it.
 */
export class JsonTexts {
  readonly #texts = new Map<object, string>();

  /** Records that `value` was parsed from `text`. */
  remember(value: object, text: string): void {
    this.#texts.set(value, text);
  }

  /** The JSON text of `value`: the text it was parsed from when recorded, or its serialization. */
  textOf(value: object): string {
    return this.#texts.get(value) ?? JSON.stringify(value);
  }
}
