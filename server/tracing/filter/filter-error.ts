/**
 * A filter expression that cannot be used: a syntax error, an unknown function or field, or a value
 * of the wrong type. Carries where the problem is and what would have been valid there, so an API
 * can answer `invalid filter at position 12: expected ")"`.
 */
export class FilterError extends Error {
  /** 0-based character offset in the filter text where the problem starts (as `JSON.parse` counts). */
  readonly position: number;
  /** What would have been valid at {@link position}, such as `")"` or `a UUID string`. */
  readonly expected: string;
  /** The problem without the position prefix, such as `expected ")"` or `unknown field "nme"; expected ...`. */
  readonly detail: string;

  constructor(position: number, expected: string, detail?: string) {
    const text = detail ?? `expected ${expected}`;
    super(`invalid filter at position ${position}: ${text}`);
    this.name = "FilterError";
    this.position = position;
    this.expected = expected;
    this.detail = text;
  }
}

/**
 * The message of a {@link FilterError} naming the request parameter the filter came from, such as
 * `invalid trace_filter at position 3: expected "("`.
 */
export function describeFilterError(error: FilterError, parameter: string): string {
  return `invalid ${parameter} at position ${error.position}: ${error.detail}`;
}
