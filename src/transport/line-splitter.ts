/**
 * Splits a byte stream into `\n`-terminated lines (a trailing `\r` is dropped), bounded: a line
 * longer than `maxLineBytes` calls `onOverflow` once and the splitter stops, since a command that
 * writes unbounded lines cannot be followed any more. Empty lines are skipped.
 */
export class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #onLine: (line: Buffer) => void;
  readonly #onOverflow: () => void;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #stopped = false;

  constructor(maxLineBytes: number, onLine: (line: Buffer) => void, onOverflow: () => void) {
    this.#maxLineBytes = maxLineBytes;
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.#stopped) {
      const end = chunk.indexOf(0x0a, start);
      if (end === -1) break;
      let line = chunk.subarray(start, end);
      if (this.#pendingBytes > 0) {
        line = Buffer.concat([...this.#pending, line], this.#pendingBytes + line.length);
        this.#pending = [];
        this.#pendingBytes = 0;
      }
      start = end + 1;
      if (line.length > 0 && line[line.length - 1] === 0x0d) line = line.subarray(0, line.length - 1);
      if (line.length > this.#maxLineBytes) {
        this.#overflow();
        return;
      }
      if (line.length > 0) this.#onLine(line);
    }
    if (this.#stopped || start >= chunk.length) return;
    const rest = chunk.subarray(start);
    this.#pendingBytes += rest.length;
    if (this.#pendingBytes > this.#maxLineBytes + 1) {
      this.#overflow();
      return;
    }
    this.#pending.push(rest);
  }

  #overflow(): void {
    this.#stopped = true;
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#onOverflow();
  }
}
