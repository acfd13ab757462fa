/** A JSON value as stored in a jsonb column. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object as stored in a jsonb column. */
export type JsonObject = { [key: string]: JsonValue };
