import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** File in DATA_DIR holding the generated key when WEBHOOK_SECRET_KEYS is not set. */
export const KEY_FILE_NAME = 'webhook-secret.key';
const VERSION = 'v1';

/**
 * Encrypts webhook secrets at rest with AES-256-GCM under server keys. The first key encrypts;
 * every key decrypts (rotation: put the new key first, keep the old ones until `reencrypt` has run).
 * Stored form: `v1.<key id>.<iv b64url>.<ciphertext b64url>.<tag b64url>`, the key id being the
 * first 8 hex digits of SHA-256 of the key, so the right key is picked without trial.
 */
export class SecretBox {
  readonly #keys: Array<{ id: string; key: Buffer }>;

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('SecretBox needs at least one key');
    this.#keys = keys.map((key) => {
      if (key.length !== 32) throw new Error('webhook secret keys must be 32 bytes');
      return { id: keyId(key), key };
    });
  }

  /** Keys from WEBHOOK_SECRET_KEYS, else the key file in dataDir, created (mode 0600) if missing. */
  static fromConfig(base64Keys: readonly string[], dataDir: string): SecretBox {
    if (base64Keys.length > 0) return new SecretBox(base64Keys.map((k) => Buffer.from(k, 'base64')));
    const file = path.join(dataDir, KEY_FILE_NAME);
    fs.mkdirSync(dataDir, { recursive: true });
    try {
      // 'wx': only the first process to start creates it; the others read it.
      fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const keys = fs
      .readFileSync(file, 'utf8')
      .split(/[\s,]+/)
      .filter((line) => line.length > 0)
      .map((line) => Buffer.from(line, 'base64'));
    return new SecretBox(keys);
  }

  /** Id of the key that encrypts. */
  get primaryKeyId(): string {
    return (this.#keys[0] as { id: string }).id;
  }

  encrypt(plaintext: string): string {
    const { id, key } = this.#keys[0] as { id: string; key: Buffer };
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, id, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  decrypt(stored: string): string {
    const [version, id, iv, ciphertext, tag] = stored.split('.');
    if (version !== VERSION || !id || iv === undefined || ciphertext === undefined || tag === undefined) {
      throw new Error('malformed encrypted webhook secret');
    }
    const entry = this.#keys.find((k) => k.id === id);
    if (!entry) throw new Error(`webhook secret is encrypted with key ${id}, which is not among WEBHOOK_SECRET_KEYS`);
    const decipher = createDecipheriv('aes-256-gcm', entry.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Whether `stored` is encrypted with the primary key (else `reencrypt` should rewrite it). */
  isCurrent(stored: string): boolean {
    return stored.split('.')[1] === this.primaryKeyId;
  }
}

function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}
