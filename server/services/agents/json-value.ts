import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";

/** A JSON value as a `google.protobuf.Value` message. */
export function toValue(value: JsonValue): Value {
  return fromJson(ValueSchema, value);
}
