// DNS messages over a stream, framed by a two-byte length (RFC 1035 §4.2.2, RFC 7766). A peer
// decides how its bytes are cut: a slow or hostile one sends a message one byte per segment.
// Joining the buffered bytes with each chunk (Buffer.concat per 'data' event) copies O(n²) bytes:
// a 64 KiB message dripped a byte at a time is about 2 GiB of copying for one question. Here the
// two length bytes are read as they come, then one buffer of exactly that length is allocated and
// each chunk is copied into it once: every byte is copied once, whatever the chunking, and what a
// reader holds is never more than one message (65,535 bytes) plus the two length bytes.
export const MAX_DNS_MESSAGE_BYTES = 0xffff;

export class DnsFrameReader {
  /** The length prefix being read (0, 1 or 2 bytes of it seen). */
  #prefix = 0;
  #prefixBytes = 0;
  /** The message being filled, once its length is known. */
  #message: Buffer | null = null;
  #filled = 0;

  /** The length the current message announced; null while its prefix is incomplete. */
  get pendingLength(): number | null {
    return this.#prefixBytes === 2 ? this.#prefix : null;
  }

  /** Bytes held for the message not yet complete (its prefix included). */
  get buffered(): number {
    return this.#prefixBytes + this.#filled;
  }

  /** Takes a chunk; returns the messages it completed, in order (often none). */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.#prefixBytes < 2) {
        this.#prefix = (this.#prefix << 8) | chunk[at]!;
        this.#prefixBytes++;
        at++;
        if (this.#prefixBytes < 2) continue;
        this.#message = Buffer.allocUnsafe(this.#prefix);
        this.#filled = 0;
      }
      const message = this.#message!;
      const take = Math.min(message.length - this.#filled, chunk.length - at);
      chunk.copy(message, this.#filled, at, at + take);
      this.#filled += take;
      at += take;
      if (this.#filled === message.length) out.push(this.#complete());
    }
    // A zero-length message completes with its prefix alone.
    if (this.#prefixBytes === 2 && this.#message?.length === 0) out.push(this.#complete());
    return out;
  }

  #complete(): Buffer {
    const message = this.#message!;
    this.#message = null;
    this.#prefix = 0;
    this.#prefixBytes = 0;
    this.#filled = 0;
    return message;
  }
}

/** One message with its two-byte length prefix, ready to write on a stream. */
export function frameMessage(message: Buffer): Buffer {
  const frame = Buffer.alloc(2 + message.length);
  frame.writeUInt16BE(message.length, 0);
  message.copy(frame, 2);
  return frame;
}
