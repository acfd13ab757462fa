/** Receives a child process's text output in chunks and hands it on as whole lines. */
export interface OutputLines {
  /** Takes the next chunk (already decoded: a stream with `setEncoding("utf8")` never splits a character). */
  push(chunk: string): void;
  /** Hands on what is left after the last newline (call when the output ends). */
  flush(): void;
}

/**
 * Splits a process's output into whole lines: a line split across two reads is joined before it is
 * handed on, so every log line carries one complete message. `\r\n` counts as a newline; empty lines
 * are dropped.
 */
export function createOutputLines(onLine: (line: string) => void): OutputLines {
  let partial = "";
  const emit = (line: string) => {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text.trim() !== "") onLine(text);
  };
  return {
    push(chunk) {
      const pieces = (partial + chunk).split("\n");
      partial = pieces.pop() ?? "";
      for (const piece of pieces) emit(piece);
    },
    flush() {
      const rest = partial;
      partial = "";
      emit(rest);
    },
  };
}
