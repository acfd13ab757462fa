/** Names remembered by default: ten thousand projects, about a megabyte. */
const REMEMBERED_NAMES = 10_000;

/**
 * Tracing project ids by workspace and name, as this process last resolved them for ingest. A
 * batch that names only remembered projects sends its runs with those ids in the same round trip
 * as its locks, rather than waiting for a lookup first; the lookup goes ahead of the runs in that
 * pipeline and confirms the ids under a lock ({@link confirmProjectIds} in project-store.ts). A
 * project deleted, renamed or created again since, by this process or another, shows there as a
 * mismatch: the batch is rolled back and written again with the names looked up, which replaces
 * what is remembered here.
 */
export class ProjectIdsByName {
  /** Key: the workspace id (fixed length, so no separator is needed) followed by the name. */
  readonly #ids = new Map<string, string>();

  /**
   * @param capacity Names remembered at most; the longest remembered are forgotten first. A name
   *   costs about a hundred bytes here, and forgetting one costs a batch one round trip.
   */
  constructor(readonly capacity = REMEMBERED_NAMES) {}

  /** The id of each of `names`, or undefined when one of them is not remembered. */
  lookup(workspaceId: string, names: Iterable<string>): Map<string, string> | undefined {
    const ids = new Map<string, string>();
    for (const name of names) {
      const id = this.#ids.get(workspaceId + name);
      if (id === undefined) return undefined;
      ids.set(name, id);
    }
    return ids;
  }

  /** Remembers the ids of a workspace's projects by name, as a committed transaction found them. */
  remember(workspaceId: string, ids: ReadonlyMap<string, string>): void {
    for (const [name, id] of ids) {
      const key = workspaceId + name;
      this.#ids.delete(key);
      this.#ids.set(key, id);
      if (this.#ids.size > this.capacity) this.#ids.delete(this.#ids.keys().next().value as string);
    }
  }

  /** Forgets names of a workspace, once their remembered ids proved stale. */
  forget(workspaceId: string, names: Iterable<string>): void {
    for (const name of names) this.#ids.delete(workspaceId + name);
  }
}
