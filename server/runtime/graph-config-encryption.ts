/**
 * The graphs file's `encryption` section (`{"path": "./encryption.ts:encryption"}`, custom encryption
 * at rest). agentplane encrypts with its built-in AES (AGENTPLANE_AES_KEY) only: a file that asks
 * for custom encryption is refused at start-up, naming the key, rather than served with the data it
 * meant to protect stored in the clear.
 */
export function checkEncryptionSection(value: unknown, problems: string[]): void {
  if (value === undefined) return;
  problems.push(
    "encryption.path: custom encryption is not supported by agentplane yet; remove the encryption section and set AGENTPLANE_AES_KEY and AGENTPLANE_AES_JSON_KEYS for built-in encryption at rest",
  );
}
