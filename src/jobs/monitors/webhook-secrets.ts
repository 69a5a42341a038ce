// Webhook signing secrets (Standard Webhooks, CONTRACT §14): `whsec_` + base64 of 32 random bytes,
// the bytes being the HMAC-SHA256 key; a signature is `v1,` + base64(HMAC(key, "{id}.{ts}.{body}")).
// At rest a secret is sealed with AES-256-GCM under a key derived from WEBHOOK_SECRET_KEY (HKDF),
// so a database dump holds no signing secret:
//
//   sealed = format (1 byte) ‖ key id (4 bytes) ‖ iv (12) ‖ ciphertext ‖ tag (16)
//
// Format 2 binds the secret to its monitor: the GCM additional data is the header and the
// monitor's public id, so a sealed secret copied into another monitor's row does not open there.
// Format 1 (before issue 44) bound nothing; it still opens, with any monitor, until `webhooks rekey`
// re-seals it as format 2 (docs/operations.md). The key id says which WEBHOOK_SECRET_KEY sealed it,
// so the key can be rotated: WEBHOOK_SECRET_KEY_PREVIOUS opens what the old one sealed while the
// rekey re-seals every secret under the new one.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** Sealed before issue 44: no monitor bound (opens anywhere; `webhooks rekey` upgrades it). */
const FORMAT_UNBOUND = 1;
/** Bound to the monitor's public id (GCM additional data). */
const FORMAT_BOUND = 2;
const IV_LEN = 12;
const TAG_LEN = 16;
const HEADER_LEN = 5;
const SALT = Buffer.from('lss-webhook-secret', 'utf8');

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key a `whsec_` secret stands for. */
export function secretKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** One `v1,<base64>` signature of an event body. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretKeyBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The webhook-signature header: one signature per secret, space-separated (a rotation's overlap). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => signature(s, id, timestamp, body)).join(' ');
}

interface SealingKey {
  id: Buffer;
  key: Buffer;
}

function deriveKey(material: string): SealingKey {
  const ikm = Buffer.from(material, 'utf8');
  return {
    id: Buffer.from(hkdfSync('sha256', ikm, SALT, 'lss webhook key id v1', 4)),
    key: Buffer.from(hkdfSync('sha256', ikm, SALT, 'lss webhook aes-256-gcm v1', 32)),
  };
}

/** What `inspect` found: the secret, and whether it is sealed as `seal` would seal it now. */
export interface Opened {
  secret: string;
  /** Sealed under WEBHOOK_SECRET_KEY, bound to its monitor: nothing for a rekey to do. */
  current: boolean;
}

/** Seals and opens webhook secrets with WEBHOOK_SECRET_KEY (and its predecessor during a rotation). */
export class SecretBox {
  readonly #current: SealingKey;
  readonly #keys: SealingKey[];

  constructor(material: string, previous?: string) {
    this.#current = deriveKey(material);
    this.#keys = [this.#current];
    if (previous && previous !== material) this.#keys.push(deriveKey(previous));
  }

  /** Seals `secret` for the monitor `monitorRef` (its public id): it opens for that monitor only. */
  seal(secret: string, monitorRef: string): Buffer {
    const header = Buffer.concat([Buffer.of(FORMAT_BOUND), this.#current.id]);
    const iv = randomBytes(IV_LEN);
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv, { authTagLength: TAG_LEN });
    cipher.setAAD(Buffer.concat([header, Buffer.from(monitorRef, 'utf8')]));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([header, iv, body, cipher.getAuthTag()]);
  }

  /** The secret, or null when no configured key sealed it for this monitor (or it was tampered with). */
  open(sealed: Buffer, monitorRef: string): string | null {
    return this.inspect(sealed, monitorRef)?.secret ?? null;
  }

  inspect(sealed: Buffer, monitorRef: string): Opened | null {
    const format = sealed[0];
    if (sealed.length < HEADER_LEN + IV_LEN + TAG_LEN || (format !== FORMAT_BOUND && format !== FORMAT_UNBOUND)) {
      return null;
    }
    const header = sealed.subarray(0, HEADER_LEN);
    const k = this.#keys.find((x) => x.id.equals(sealed.subarray(1, HEADER_LEN)));
    if (!k) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', k.key, sealed.subarray(HEADER_LEN, HEADER_LEN + IV_LEN), {
        authTagLength: TAG_LEN,
      });
      decipher.setAAD(format === FORMAT_BOUND ? Buffer.concat([header, Buffer.from(monitorRef, 'utf8')]) : header);
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_LEN));
      const plain = Buffer.concat([
        decipher.update(sealed.subarray(HEADER_LEN + IV_LEN, sealed.length - TAG_LEN)),
        decipher.final(),
      ]);
      return { secret: plain.toString('utf8'), current: format === FORMAT_BOUND && k === this.#current };
    } catch {
      return null;
    }
  }

  /** A sealed secret as text (the stored replay of a create or a rotation: `sealed:v1:<base64url>`). */
  sealText(secret: string, monitorRef: string): string {
    return `sealed:v1:${this.seal(secret, monitorRef).toString('base64url')}`;
  }

  openText(text: string, monitorRef: string): string | null {
    return text.startsWith('sealed:v1:') ? this.open(Buffer.from(text.slice(10), 'base64url'), monitorRef) : null;
  }
}
