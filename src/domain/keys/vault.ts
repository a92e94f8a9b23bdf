/** Encrypts recoverable keys at rest (implementation: src/storage/vault.ts). */
export interface Vault {
  encrypt(workspaceId: string, plaintext: string): Promise<{ encrypted: string; encryptionKeyId: string }>;
  decrypt(workspaceId: string, encrypted: string, encryptionKeyId: string): Promise<string>;
}
