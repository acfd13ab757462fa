/**
 * Log lines on their way to stderr, written in batches: the lines of a short window
 * ({@link FLUSH_AFTER_MS}) go out in one write once it ends instead of one write system call each,
 * which is most of what a line costs on a busy server, and at one request at a time a write per
 * turn of the event loop is still a write per request. Nothing is lost on the way out: the batch is
 * written synchronously when the process exits (`process.exit`, a signal handler's exit, the loop
 * running dry) and when it dies of an uncaught exception or rejection, before Node prints it. Only
 * SIGKILL or a crash of the runtime itself can lose the lines of the current window.
 */

/** Where batched lines go. */
export interface LineSink {
  /** Queues one line (with its newline); it is written within {@link FLUSH_AFTER_MS}. */
  write(line: string): void;
  /**
   * Makes room for one line of at most `most` bytes ({@link MOST_LINE_BYTES} at most), which the
   * caller writes as UTF-8 into {@link batch} from the offset returned, then queues with
   * {@link commit}; nothing else may be written in between.
   */
  reserve(most: number): number;
  /** The buffer a {@link reserve}d line is written into; it changes only during a flush. */
  readonly batch: Buffer;
  /** Queues the line {@link reserve} made room for, which ends at `end`. */
  commit(end: number): void;
  /** Writes what is queued now. */
  flush(): void;
}

/**
 * Above this many queued bytes a batch is written at once rather than at the end of its window, so a
 * burst (a loop logging thousands of lines) holds bounded memory: 64 KiB of JSON lines are one
 * Linux pipe buffer, so one write still moves the batch whole.
 */
const MAX_BATCH_BYTES = 64 * 1024;

/**
 * Room for the batch: a full batch plus the longest line copied in whole (longer lines are written
 * on their own). A UTF-16 code unit takes at most 3 bytes of UTF-8.
 */
const BATCH_CAPACITY = 4 * MAX_BATCH_BYTES;
const MAX_UTF8_BYTES_PER_UNIT = 3;

/** The longest line {@link LineSink.reserve} takes: what fits in a batch that is not empty. */
export const MOST_LINE_BYTES = BATCH_CAPACITY - MAX_BATCH_BYTES;

/**
 * How long the first line of a batch waits for others: at most ten writes a second however many
 * requests a second are logged (and at most a 64 KiB batch's worth sooner), and a line reaches a log
 * collector that much later at most, below what anyone watching a log notices. An append to a file
 * costs the server 30-45 µs of CPU for 5 KiB and about 65 µs for 50 KiB (ext4, measured on the
 * bench VM): with 10 ms windows those writes were a measurable part of the access log's cost at a
 * few thousand requests a second.
 */
export const FLUSH_AFTER_MS = 100;

/**
 * Where a {@link LineSink} writes a batch: it must be done with `bytes` when it returns, as
 * `process.stderr.write` is for files, pipes and terminals on Linux (synchronous), so that a flush
 * at exit completes before the process ends; it returns true when it still holds them (a stream
 * that queued the write), and the sink then gives up that buffer rather than fill it again.
 */
export type BatchWriter = (bytes: Buffer) => boolean;

/**
 * A {@link LineSink} over `write`. Queued lines are copied as UTF-8 into one Buffer outside the
 * JavaScript heap rather than joined into a string: a string that lives through a batch's window
 * survives the young generation's collections and is copied, then promoted, which at thousands of
 * lines a second cost more than building the lines. The batch goes out as those bytes, not decoded
 * into a string again for the stream to encode once more.
 */
export function createLineSink(write: BatchWriter): LineSink {
  let batch = Buffer.allocUnsafe(BATCH_CAPACITY);
  let used = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (used === 0) return;
    const bytes = batch.subarray(0, used);
    used = 0;
    if (write(bytes)) batch = Buffer.allocUnsafe(BATCH_CAPACITY);
  };
  const queued = (end: number): void => {
    used = end;
    if (used >= MAX_BATCH_BYTES) flush();
    else if (timer === undefined) {
      timer = setTimeout(flush, FLUSH_AFTER_MS);
      // The exit hooks write what is left: a pending batch does not keep the process alive.
      timer.unref();
    }
  };
  return {
    write(line) {
      const most = line.length * MAX_UTF8_BYTES_PER_UNIT;
      if (used + most > BATCH_CAPACITY) flush();
      if (most > BATCH_CAPACITY) {
        write(Buffer.from(line, "utf8"));
        return;
      }
      queued(used + batch.write(line, used));
    },
    reserve(most) {
      if (most > MOST_LINE_BYTES) throw new RangeError(`a line of ${most} bytes does not fit a batch`);
      // A batch holds less than MAX_BATCH_BYTES between lines: room for the most is always left.
      return used;
    },
    get batch() {
      return batch;
    },
    commit: queued,
    flush,
  };
}

let stderrSink: LineSink | undefined;

/**
 * The process's one batched sink to stderr, made on first use together with the hooks that flush
 * it when the process exits or crashes (registered once, however many loggers share it).
 */
export function stderrLines(): LineSink {
  if (stderrSink) return stderrSink;
  const sink = createLineSink((bytes) => {
    process.stderr.write(bytes);
    // Bytes a stream could not write at once stay queued in it, referring to the batch's buffer.
    return process.stderr.writableLength > 0;
  });
  process.on("exit", sink.flush);
  // Runs before Node prints an uncaught exception (or rejection) and exits without an "exit" event.
  process.on("uncaughtExceptionMonitor", sink.flush);
  stderrSink = sink;
  return sink;
}
