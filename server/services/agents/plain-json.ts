import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";

export { isObject, toPlainJson } from "../../runtime/plain-json.js";

/** A JSON value as a `google.protobuf.Value` message. */
export function toValue(value: JsonValue): Value {
  return fromJson(ValueSchema, value);
}
