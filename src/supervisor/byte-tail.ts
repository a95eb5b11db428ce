/**
 * The most recent `capacity` bytes of a stream (a command's stderr), for diagnostics. Older bytes
 * are dropped, so a chatty command cannot grow memory without bound.
 */
export class ByteTail {
  readonly #capacity: number;
  #chunks: Buffer[] = [];
  #length = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  push(chunk: Buffer): void {
    if (this.#capacity === 0) return;
    const kept = chunk.length > this.#capacity ? chunk.subarray(chunk.length - this.#capacity) : chunk;
    this.#chunks.push(kept);
    this.#length += kept.length;
    while (this.#length > this.#capacity) {
      const first = this.#chunks[0] as Buffer;
      const excess = this.#length - this.#capacity;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#length -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#length -= excess;
      }
    }
  }

  /** The kept bytes as UTF-8 (a character cut at the front decodes as U+FFFD). */
  text(): string {
    return Buffer.concat(this.#chunks, this.#length).toString('utf8');
  }

  get length(): number {
    return this.#length;
  }
}
