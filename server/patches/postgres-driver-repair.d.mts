/** Which of the postgres.js driver's files under `root` (the installed driver by default) lack the repair. */
export function postgresDriverRepairState(root?: string): Promise<{ version: string; unrepaired: string[] }>;
/** Repairs the driver's files not yet repaired; throws naming the repair when the code changed. */
export function repairPostgresDriver(root?: string): Promise<void>;
