import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The encryption context of custom encryption at rest (`encryption.path` of the graphs file): the
 * JSON object its `context` handler derived from the authenticated caller (e.g. a tenant id), handed
 * to every encrypt handler and stored beside what it encrypted so that decrypt gets it back.
 */
export type EncryptionContextValue = Readonly<Record<string, unknown>>;

/**
 * One request's or one run's scope. Mutable: a request's scope is opened before authentication,
 * which then fills the context in for everything the request does afterwards.
 */
interface EncryptionScope {
  context: EncryptionContextValue | undefined;
}

const scopes = new AsyncLocalStorage<EncryptionScope>();

/** Runs `fn` in a fresh scope without a context yet (one per HTTP request, before authentication). */
export function withEncryptionScope<T>(fn: () => T): T {
  return scopes.run({ context: undefined }, fn);
}

/** `handler`, each call of which runs in a fresh scope ({@link withEncryptionScope}). */
export function scopedHandler<A extends unknown[]>(handler: (...args: A) => void): (...args: A) => void {
  return (...args) => withEncryptionScope(() => handler(...args));
}

/**
 * Runs `fn` with `context` (a run or cron executing for the caller that created it). With no
 * context and no scope around, `fn` runs as it is: it would see no context either way, and a
 * storage never entered costs nothing, while an entered one taxes every promise of the process
 * (Node's AsyncLocalStorage copies each entered storage into every new async resource), which a
 * server without custom encryption would pay for nothing on every run.
 */
export function runWithEncryptionContext<T>(context: EncryptionContextValue | undefined, fn: () => T): T {
  if (context === undefined && scopes.getStore() === undefined) return fn();
  return scopes.run({ context }, fn);
}

/** Sets the context of the current scope (authentication does); nothing outside any scope. */
export function setEncryptionContext(context: EncryptionContextValue | undefined): void {
  const scope = scopes.getStore();
  if (scope) scope.context = context;
}

/** The context of the current scope, undefined outside any or before authentication. */
export function currentEncryptionContext(): EncryptionContextValue | undefined {
  return scopes.getStore()?.context;
}

/** The current context as stored with a run or cron (JSON text), null when there is none. */
export function encryptionContextText(): string | null {
  const context = currentEncryptionContext();
  return context === undefined ? null : JSON.stringify(context);
}

/** The context stored by {@link encryptionContextText}. */
export function parseEncryptionContext(text: string | null): EncryptionContextValue | undefined {
  return text === null ? undefined : (JSON.parse(text) as EncryptionContextValue);
}
