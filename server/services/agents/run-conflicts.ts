import { Code, ConnectError } from "@connectrpc/connect";
import { pgErrorCode } from "../../store/db.js";

/**
 * `work`, with the deadlocks and serialization failures of racing run writes (a create or cancel
 * meeting a run's end on the same thread) answered as ABORTED (409, retry), never as a 500.
 */
export async function conflictsAs409<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const code = pgErrorCode(error);
    if (code === "40P01" || code === "40001")
      throw new ConnectError(
        "the run changed while this request ran (a race with its end); retry",
        Code.Aborted,
      );
    throw error;
  }
}
