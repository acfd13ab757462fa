/** `text` as a number of at least `min` (`integer` also refuses fractions); throws naming `--name` otherwise. */
export function numberValue(name: string, text: string, min: number, integer = false): number {
  const value = Number(text);
  if (!(value >= min) || (integer && !Number.isInteger(value)))
    throw new Error(`--${name}: ${text} is not ${integer ? "an integer" : "a number"} ≥ ${min}`);
  return value;
}

/** The comma-separated `text` as members of `allowed`; throws naming `--name` on any other item. */
export function listValue<T extends string>(name: string, text: string, allowed: readonly T[]): T[] {
  const items = text.split(",").map((item) => item.trim());
  for (const item of items)
    if (!allowed.includes(item as T))
      throw new Error(`--${name}: unknown ${item} (one of ${allowed.join(", ")})`);
  return items as T[];
}
