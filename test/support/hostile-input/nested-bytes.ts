import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

/** One layer of a nested message: the bytes that go before `innerSize` bytes of what it encloses. */
export type Layer = (innerSize: number) => Uint8Array;

/** The tag and length of length-delimited field `field` enclosing `innerSize` bytes. */
export function lengthPrefix(field: number): Layer {
  return (innerSize) => new BinaryWriter().tag(field, WireType.LengthDelimited).uint32(innerSize).finish();
}

/**
 * A binary message nested `levels` times, each level made of `layers` (innermost first) and the
 * whole wrapped by `outermost`. Written from the inside out without recursion, so it can be far
 * deeper than any encoder (or decoder) could recurse.
 */
export function nestedMessageBytes(levels: number, layers: readonly Layer[], outermost: Layer): Uint8Array {
  const prefixes: Uint8Array[] = [];
  let size = 0;
  for (let i = 0; i < levels; i++) {
    for (const layer of layers) {
      const prefix = layer(size);
      size += prefix.length;
      prefixes.push(prefix);
    }
  }
  prefixes.push(outermost(size));
  return Buffer.concat(prefixes.reverse());
}
