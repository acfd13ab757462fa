import { type ChildProcess, spawn } from "node:child_process";

/** An agentplane server running as its own process (`npm start`'s entry point). */
export interface AgentplaneProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** Resolves when the process exits: "exit 0", or the code or signal and the end of stderr. */
  readonly exited: Promise<string>;
  /** Everything the process wrote to stderr so far (its JSON log lines). */
  stderr(): string;
}

/**
 * Starts `server/main.ts` with `env` added to this process's environment, on port 0; resolves
 * once it prints where it listens.
 */
export async function startAgentplaneProcess(env: Record<string, string>): Promise<AgentplaneProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    env: { ...process.env, AGENTPLANE_PORT: "0", AGENTPLANE_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<string>((resolve) =>
    child.on("exit", (code, signal) =>
      resolve(code === 0 ? "exit 0" : `exit ${code ?? signal}: ${stderr.slice(-2000)}`),
    ),
  );
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/\S+)\n/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    exited.then((how) => reject(new Error(`agentplane exited with ${how} before listening`)));
  });
  return { child, baseUrl, exited, stderr: () => stderr };
}
