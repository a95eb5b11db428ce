import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The callback token of an `open_url` gate: an HMAC of the gate id under a secret the nodes share
 * (kept in Redis, or for the process's life in embedded mode), so any node checks a token without
 * asking anyone, and a token names one gate only. It is one-time because the store spends it with
 * the answer it brings (`tokenUsed`, in the same atomic step).
 */
export class GateTokens {
  readonly #secret: Buffer;

  constructor(secret: Buffer) {
    if (secret.length < 32) throw new RangeError('a gate token secret needs at least 32 bytes');
    this.#secret = secret;
  }

  mint(gateId: string): string {
    return createHmac('sha256', this.#secret).update(`scope-gate-callback\u0000${gateId}`, 'utf8').digest('base64url');
  }

  /** Whether `token` is the one minted for `gateId` (constant time). */
  verify(gateId: string, token: string): boolean {
    const expected = Buffer.from(this.mint(gateId));
    const presented = Buffer.from(token);
    return expected.length === presented.length && timingSafeEqual(expected, presented);
  }
}
