import { createHash, hash as oneShotHash, type Hash } from 'node:crypto';
import { ErrorCode, KernelError } from './errors.js';

const digestPattern = /^sha256:[0-9a-f]{64}$/;

/**
 * Bytes whose digest is worth computing only when it is read: a tree snapshot, hashed whole at
 * every commit otherwise, although the embedded committer never reads the text (see `Digest.deferred`).
 */
export interface DeferredBytes {
  /** The lowercase hex sha256 of the bytes. */
  sha256Hex(): string;
  /** Whether `other` holds the same bytes, when that is cheaper to tell than hashing both; undefined when it cannot tell. */
  sameBytes(other: DeferredBytes): boolean | undefined;
}

/**
 * A canonical SHA-256 content identity: `sha256:` followed by 64 lowercase hex digits.
 * Digests identify exact bytes, not semantic JSON equality.
 */
export class Digest {
  /** Undefined until a deferred digest is first read. */
  #text: string | undefined;
  #bytes: DeferredBytes | undefined;

  private constructor(text: string | undefined, bytes?: DeferredBytes) {
    this.#text = text;
    this.#bytes = bytes;
    Object.freeze(this);
  }

  /**
   * The digest of `bytes`, hashed when its text is first needed. Comparing two digests that are
   * both still deferred asks the bytes (`sameBytes`) rather than hashing them; a digest compared
   * with itself is equal without either.
   */
  static deferred(bytes: DeferredBytes): Digest {
    return new Digest(undefined, bytes);
  }

  /** Validates a canonical `sha256:<lowercase hex>` identity; uppercase hex is rejected. */
  static parse(text: unknown): Digest {
    if (typeof text !== 'string' || !digestPattern.test(text)) {
      throw new KernelError(ErrorCode.invalidDigest, `invalid digest: ${describe(text)}`);
    }
    return new Digest(text);
  }

  /** The digest of exact bytes (a string is hashed as its UTF-8 encoding). */
  static of(data: Uint8Array | string): Digest {
    return new Digest(`sha256:${sha256Hex(data)}`);
  }

  /**
   * The digest of the concatenation of `parts` (strings as UTF-8), without building it: equal to
   * `Digest.of(parts.join(''))`, so a record assembled from cached pieces hashes as its bytes.
   */
  static ofParts(parts: Iterable<Uint8Array | string>): Digest {
    const hash = createHash('sha256');
    for (const part of parts) hash.update(part);
    return new Digest(`sha256:${hash.digest('hex')}`);
  }

  /** The digest a sha256 `hash` the caller fed finishes with (the hash is spent). */
  static finish(hash: Hash): Digest {
    return new Digest(`sha256:${hash.digest('hex')}`);
  }

  /** The 64 lowercase hex digits without the `sha256:` prefix. */
  get hex(): string {
    return this.#resolved().slice(7);
  }

  equals(other: Digest | undefined): boolean {
    if (other === undefined) return false;
    if (other === this) return true;
    if (this.#bytes !== undefined && other.#bytes !== undefined) {
      const same = this.#bytes.sameBytes(other.#bytes);
      if (same !== undefined) return same;
    }
    return other.#resolved() === this.#resolved();
  }

  toString(): string {
    return this.#resolved();
  }

  toJSON(): string {
    return this.#resolved();
  }

  #resolved(): string {
    if (this.#text === undefined) {
      this.#text = `sha256:${(this.#bytes as DeferredBytes).sha256Hex()}`;
      // The bytes' owner may go; the text is all a digest needs from now on.
      this.#bytes = undefined;
    }
    return this.#text;
  }
}

/** The canonical SHA-256 identity of `data` (strings hash as UTF-8). */
export function computeDigest(data: Uint8Array | string): Digest {
  return Digest.of(data);
}

/** One-shot `crypto.hash` (Node ≥ 20.12): about 2.5× cheaper than a Hash object for the short texts identities hash. */
export function sha256Hex(data: Uint8Array | string): string {
  return oneShotHash('sha256', data, 'hex');
}

/** A short, safe rendering of rejected input for error messages. */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
    return JSON.stringify(shown);
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}
