/**
 * The JSON text a parsed object came from, kept beside it (weakly) so that a writer can send that
 * text to Postgres as it arrived instead of stringifying the object again. Trace ingest parses each
 * multipart part (to validate it and read token usage from it) and then writes the same documents
 * as `jsonb`: for inputs, outputs and extra, the bulk of a run, the second serialization was a fifth
 * of the server's CPU per run.
 *
 * Only text the registering code has validated belongs here: text that `JSON.parse` accepted and
 * whose parsed value passed the input screen (so it holds no NUL, no lone surrogate, no number that
 * parses to infinity). The object must not be changed afterwards: the text would no longer match it.
 */
const sources = new WeakMap<object, string>();

/** Records that `value` was parsed from `text`. */
export function rememberJsonText(value: object, text: string): void {
  sources.set(value, text);
}

/** The JSON text of `value`: the text it was parsed from when recorded, or its serialization. */
export function jsonTextOf(value: object): string {
  return sources.get(value) ?? JSON.stringify(value);
}
