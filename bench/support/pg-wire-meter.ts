/**
 * What a server process says to Postgres, counted on the wire: installed in a bench's server child
 * (bench/support/agentplane-child.ts), it wraps `net.Socket.prototype.write` and counts, on the
 * sockets connected to the bench's Postgres port, the statements sent (Execute and simple Query
 * messages of the frontend protocol), the statements prepared (Parse), the socket writes (each one
 * a flush that wakes a backend: with pipelining, several statements share one), the chunks read
 * back, and the bytes each way. A bench reads the counters before and after a cell and divides by
 * the runs it completed: statements, round trips and bytes per run, beside CPU per run.
 */
import { Socket } from "node:net";

/** The counters of {@link installPgWireMeter}, since it was installed. */
export interface PgWireCounts {
  /** Execute ('E') and simple Query ('Q') messages: statements run. */
  statements: number;
  /** Parse ('P') messages: statements prepared (a new statement text on a connection). */
  parses: number;
  /** Socket writes: flushes to a backend, a round trip's start. */
  writes: number;
  /** Data chunks read from Postgres. */
  reads: number;
  bytesOut: number;
  bytesIn: number;
}

/** Frontend message types the counters look for. */
const EXECUTE = 0x45; // 'E'
const QUERY = 0x51; // 'Q'
const PARSE = 0x50; // 'P'
/** A message is a type byte then its length (4 bytes, counting itself). */
const HEADER_BYTES = 5;

/** Counts the statement messages in one write (whole messages: postgres.js writes no partial ones). */
function countMessages(buffer: Buffer, counts: PgWireCounts): void {
  let at = 0;
  while (at + HEADER_BYTES <= buffer.length) {
    const type = buffer[at];
    const length = buffer.readInt32BE(at + 1);
    // The startup message has no type byte: its bytes read as nonsense, and the count stops there.
    if (length < 4 || at + 1 + length > buffer.length) return;
    if (type === EXECUTE || type === QUERY) counts.statements += 1;
    else if (type === PARSE) counts.parses += 1;
    at += 1 + length;
  }
}

/** Sockets to Postgres seen so far, with the reader already attached. */
const metered = new WeakSet<Socket>();

/**
 * Starts counting the traffic of this process to Postgres on `port` (the bench's server listens
 * there; a socket's remote port tells its connections apart from the HTTP ones). Returns a
 * reader of the counters.
 */
export function installPgWireMeter(port: number): () => PgWireCounts {
  const counts: PgWireCounts = { statements: 0, parses: 0, writes: 0, reads: 0, bytesOut: 0, bytesIn: 0 };
  const write = Socket.prototype.write;
  const isPostgres = (socket: Socket & { port?: unknown }) =>
    socket.remotePort === port || socket.port === port;
  Socket.prototype.write = function meteredWrite(this: Socket, ...args: Parameters<Socket["write"]>) {
    const [chunk] = args;
    if (isPostgres(this)) {
      if (!metered.has(this)) {
        metered.add(this);
        this.on("data", (data: Buffer) => {
          counts.reads += 1;
          counts.bytesIn += data.length;
        });
      }
      if (Buffer.isBuffer(chunk)) {
        counts.writes += 1;
        counts.bytesOut += chunk.length;
        countMessages(chunk, counts);
      }
    }
    return write.apply(this, args);
  } as Socket["write"];
  return () => ({ ...counts });
}
