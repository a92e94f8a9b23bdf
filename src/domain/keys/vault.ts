import { AppError } from "../errors.js";

/** Encrypts recoverable keys at rest (implementation: src/storage/vault.ts). */
export interface Vault {
  encrypt(workspaceId: string, plaintext: string): Promise<{ encrypted: string; encryptionKeyId: string }>;
  decrypt(workspaceId: string, encrypted: string, encryptionKeyId: string): Promise<string>;
}

/**
 * No configured key-encryption key opens the workspace's data key: the server is
 * misconfigured (a retired key was dropped too early, or a key is missing), not the
 * request. Answered as a 503 so neither a wrong plaintext-less answer nor a new data
 * key (which would orphan the old ciphertexts) hides it.
 */
export class VaultUnavailableError extends AppError {
  constructor() {
    super(
      "err:svc:application:service_unavailable",
      "Recoverable keys cannot be encrypted or decrypted right now: this server is not configured with the key-encryption key that protects this workspace's keys.",
    );
  }
}
