import { createHash, type Hash } from 'node:crypto';
import { Digest } from './digest.js';

/**
 * Hashed text (in UTF-16 code units, a close enough measure) between two kept hash states. A text
 * shorter than this keeps none, so a trail of it has nothing to resume from.
 */
export const checkpointSpacing = 32 * 1024;

interface Checkpoint {
  /** The state after hashing `pieces[0 .. index)`. */
  readonly index: number;
  readonly state: Hash;
}

/**
 * sha256 of a text given as pieces (`Digest.of(pieces.join(''))`, strings as UTF-8), resumable: the
 * hash state is kept every {@link checkpointSpacing} characters, so the pieces of a changed copy of
 * the text — a tree after one commit, most pieces the same — are hashed only from the last kept
 * state before the first piece that differs. A history of thousands of retained signals is then not
 * rehashed for each new one, and the digest stays the sha256 of the canonical bytes.
 */
export class HashTrail {
  readonly #pieces: readonly string[];
  readonly #checkpoints: readonly Checkpoint[];
  readonly digest: Digest;
  /** The text's length in UTF-8 bytes, as the caller measured it. */
  readonly bytes: number;
  /**
   * The text this trail resumed from, by its digest and length, and how many leading pieces the two
   * share: this text is that one's first `sharedPieces` pieces followed by {@link piecesFrom}(sharedPieces).
   */
  readonly base: { readonly digest: Digest; readonly bytes: number; readonly sharedPieces: number } | undefined;

  private constructor(pieces: readonly string[], checkpoints: readonly Checkpoint[], digest: Digest, bytes: number, base: HashTrail['base']) {
    this.#pieces = pieces;
    this.#checkpoints = checkpoints;
    this.digest = digest;
    this.bytes = bytes;
    this.base = base;
    Object.freeze(this);
  }

  /** The pieces from `index` on. */
  piecesFrom(index: number): readonly string[] {
    return this.#pieces.slice(index);
  }

  /**
   * Hashes `pieces` (a text of `bytes` UTF-8 bytes), resuming from `previous` (the trail of an earlier
   * version of the text) where they agree.
   */
  static of(pieces: readonly string[], bytes: number, previous?: HashTrail): HashTrail {
    const kept: Checkpoint[] = [];
    let hash: Hash | undefined;
    let from = 0;
    let base: HashTrail['base'];
    if (previous !== undefined) {
      const before = previous.#pieces;
      const limit = Math.min(before.length, pieces.length);
      let same = 0;
      while (same < limit && before[same] === pieces[same]) same += 1;
      base = { digest: previous.digest, bytes: previous.bytes, sharedPieces: same };
      for (const checkpoint of previous.#checkpoints) {
        if (checkpoint.index > same) break;
        kept.push(checkpoint);
      }
      const resume = kept.at(-1);
      if (resume !== undefined) {
        hash = resume.state.copy();
        from = resume.index;
      }
    }
    hash ??= createHash('sha256');
    // The pieces between two kept states go to the hash as one string: a tree has a few hundred
    // pieces, and one update per piece cost about a third more than hashing the joined text. The
    // run is joined with Array.join, which writes one flat string; `+=` builds a rope that the hash
    // must first copy flat (bench:agent's profile: tree hashing took 12% longer that way).
    const run: string[] = [];
    let runLength = 0;
    for (let index = from; index < pieces.length; index += 1) {
      const piece = pieces[index] as string;
      run.push(piece);
      runLength += piece.length;
      if (runLength >= checkpointSpacing && index + 1 < pieces.length) {
        hash.update(run.join(''));
        kept.push({ index: index + 1, state: hash.copy() });
        run.length = 0;
        runLength = 0;
      }
    }
    hash.update(run.join(''));
    return new HashTrail(pieces, kept, Digest.finish(hash), bytes, base);
  }
}
