/**
 * The JSON values stored in jsonb columns and passed between the layers: one definition every
 * aggregate and layer imports, so no store module has to import another for a type.
 */

/** A JSON value as stored in a jsonb column. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** A JSON object as stored in a jsonb column. */
export type JsonObject = { [key: string]: JsonValue };
