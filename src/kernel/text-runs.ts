import { RawJson } from './wire.js';

/** Something written as one cached canonical text. */
export interface Spliceable {
  toWire(): RawJson;
}

/**
 * The comma-joined texts of a long append-mostly list (a mailbox's records) in fixed runs of
 * {@link TextRuns.runLength} items, each run joined once and then reused by every later version of
 * the list. A version is written as its runs and its few trailing items: measuring, hashing or
 * writing it costs the runs' count, not the items', and the runs are the same string objects from
 * one version to the next (which is what lets the tree's digest resume instead of rehashing).
 */
export class TextRuns {
  static readonly runLength = 64;
  /** The runs of the first `runs.length * runLength` items. */
  readonly #runs: readonly RawJson[];

  private constructor(runs: readonly RawJson[]) {
    this.#runs = runs;
    Object.freeze(this);
  }

  static readonly empty = new TextRuns(Object.freeze([]));

  /** The runs of `items` (every complete run joined now). */
  static of(items: readonly Spliceable[]): TextRuns {
    return TextRuns.empty.extendedTo(items);
  }

  /** These runs, for `items` that extend the list they were made for: runs completed since are joined. */
  extendedTo(items: readonly Spliceable[]): TextRuns {
    const complete = Math.floor(items.length / TextRuns.runLength);
    if (complete <= this.#runs.length) return this;
    const runs = [...this.#runs];
    for (let run = runs.length; run < complete; run += 1) runs.push(join(items, run));
    return new TextRuns(Object.freeze(runs));
  }

  /** These runs, for `items` that differ from the list they were made for only at `changed` positions. */
  replacedIn(items: readonly Spliceable[], changed: Iterable<number>): TextRuns {
    let runs: RawJson[] | undefined;
    for (const index of changed) {
      const run = Math.floor(index / TextRuns.runLength);
      if (run >= this.#runs.length) continue;
      runs ??= [...this.#runs];
      runs[run] = join(items, run);
    }
    return runs === undefined ? this : new TextRuns(Object.freeze(runs));
  }

  /** The comma-separated parts of `items`: the runs, then the items after the last complete run. */
  parts(items: readonly Spliceable[]): (string | RawJson)[] {
    const parts: (string | RawJson)[] = [];
    for (const run of this.#runs) {
      if (parts.length > 0) parts.push(',');
      parts.push(run);
    }
    for (let index = this.#runs.length * TextRuns.runLength; index < items.length; index += 1) {
      if (parts.length > 0) parts.push(',');
      parts.push((items[index] as Spliceable).toWire());
    }
    return parts;
  }
}

/** Run `run` of `items` as one text (its length summed from the items' cached lengths). */
function join(items: readonly Spliceable[], run: number): RawJson {
  const texts: string[] = [];
  let byteLength = TextRuns.runLength - 1;
  for (let index = run * TextRuns.runLength; index < (run + 1) * TextRuns.runLength; index += 1) {
    const text = (items[index] as Spliceable).toWire();
    texts.push(text.text);
    byteLength += text.byteLength;
  }
  return RawJson.spliced([texts.join(',')], byteLength);
}
