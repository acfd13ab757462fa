/**
 * A value one stage needs before the stage that makes it has run, named and set exactly once.
 *
 * The composition root has two true cycles: the job registry's jobs enqueue their successors on the
 * queue, while the queue is created from the registry; and the metrics report the run worker's
 * slots, while the run worker counts its ended runs in the metrics. Each is broken by one of these,
 * set by the stage that builds the value; reading it earlier is a bug in start-up order and throws.
 */
export interface LateBound<T> {
  /** The value; throws (naming it) when read before it was set. */
  get(): T;
  /** Sets the value; throws when set twice. */
  set(value: T): void;
}

/** A holder for `name`, empty until its stage sets it. */
export function lateBound<T>(name: string): LateBound<T> {
  let value: { current: T } | undefined;
  return {
    get() {
      if (value === undefined) throw new Error(`${name} is read before start-up has built it`);
      return value.current;
    },
    set(current) {
      if (value !== undefined) throw new Error(`${name} is set twice`);
      value = { current };
    },
  };
}
