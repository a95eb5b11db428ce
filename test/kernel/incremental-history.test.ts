import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { utf8Length } from '../../src/kernel/canonical-json.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { EffectId, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Engine } from '../../src/kernel/engine.js';
import { HashTrail } from '../../src/kernel/hash-trail.js';
import { Mailbox, MailboxRecord } from '../../src/kernel/mailbox.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { SharedMap } from '../../src/kernel/shared-map.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { TreeSnapshot as Tree } from '../../src/kernel/tree-snapshot.js';
import { encodeWire, RawJson, wirePieces, type WireValue } from '../../src/kernel/wire.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { counterDefinition } from '../../src/testing/example-definitions.js';

// Issue 13's hot path keeps the contract: an appended or consumed mailbox is the history
// `Mailbox.create` would validate, and a tree's digest — hashed from the last kept state before its
// first change — is the sha256 of its canonical bytes, exactly as a fresh computation gives it.

describe('HashTrail', () => {
  const trailOf = (pieces: readonly string[], previous?: HashTrail): HashTrail => HashTrail.of(pieces, Buffer.byteLength(pieces.join('')), previous);
  const pieceList = fc.array(fc.string({ unit: 'binary', maxLength: 3_000 }), { maxLength: 60 });

  test('the digest is the sha256 of the joined pieces, resumed or not', () => {
    fc.assert(
      fc.property(pieceList, fc.array(fc.tuple(fc.nat(), fc.string({ maxLength: 40 })), { maxLength: 5 }), fc.nat(), (pieces, edits, cut) => {
        const first = trailOf(pieces);
        assert.ok(first.digest.equals(Digest.of(pieces.join(''))));
        // A changed copy: some pieces replaced, the tail cut or extended.
        const changed = [...pieces];
        for (const [at, text] of edits) if (changed.length > 0) changed[at % changed.length] = text;
        changed.splice(cut % (changed.length + 1), 1, 'x'.repeat(cut % 50_000));
        const resumed = trailOf(changed, first);
        assert.ok(resumed.digest.equals(Digest.of(changed.join(''))), 'a resumed digest equals the fresh one');
        assert.ok(trailOf(pieces, resumed).digest.equals(first.digest), 'and resuming back gives the first again');
        // The base: the first text's first `sharedPieces` pieces, then the rest of this one, spell this text.
        const base = resumed.base;
        assert.ok(base !== undefined && base.digest.equals(first.digest) && base.bytes === first.bytes);
        assert.equal(pieces.slice(0, base.sharedPieces).join('') + resumed.piecesFrom(base.sharedPieces).join(''), changed.join(''));
        assert.equal(first.base, undefined, 'a trail hashed from scratch has no base');
      }),
      { numRuns: 300 },
    );
  });

  test('a change deep in a long text resumes from a kept state before it, never after it', () => {
    // 200 pieces of 1,000 characters: hash states are kept every 32 KiB, so a change at piece 150
    // resumes around piece 128; a change right after a kept state must not reuse that state.
    const pieces = Array.from({ length: 200 }, (_, index) => String(index % 10).repeat(1_000));
    const trail = trailOf(pieces);
    for (const at of [0, 31, 32, 33, 64, 150, 199]) {
      const changed = [...pieces];
      changed[at] = `${changed[at]}!`;
      assert.ok(trailOf(changed, trail).digest.equals(Digest.of(changed.join(''))), `a change at piece ${at}`);
    }
  });
});

describe('wirePieces', () => {
  const leaf: fc.Arbitrary<WireValue> = fc.oneof(fc.string({ maxLength: 400 }), fc.integer(), fc.boolean(), fc.constant(null));
  const value = fc.letrec<{ node: WireValue }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      leaf,
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 6 }), tie('node'), { maxKeys: 4 }),
      leaf.map((inner) => new RawJson(encodeWire(inner))),
      fc.array(fc.string({ maxLength: 300 }), { maxLength: 4 }).map((texts) => {
        const parts = texts.flatMap((text, index) => (index === 0 ? [new RawJson(encodeWire(text))] : [',', new RawJson(encodeWire(text))]));
        const text = `[${parts.map((part) => (typeof part === 'string' ? part : part.text)).join('')}]`;
        return RawJson.spliced(['[', ...parts, ']'], utf8Length(text));
      }),
    ),
  }));

  test('the pieces join to the canonical encoding', () => {
    fc.assert(
      fc.property(value.node, (node) => {
        assert.equal(wirePieces(node).join(''), encodeWire(node));
      }),
      { numRuns: 500 },
    );
  });
});

describe('SharedMap', () => {
  test('behaves as a plain map through any derivations, older versions unchanged', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.nat()), { maxLength: 6 }), { maxLength: 80 }), (batches) => {
        let shared = SharedMap.of(new Map<string, number>());
        let model = new Map<string, number>();
        const versions: Array<[SharedMap<number>, Map<string, number>]> = [];
        for (const batch of batches) {
          const changes = new Map(batch.map(([key, value]) => [String(key), value]));
          model = new Map([...model, ...changes]);
          shared = shared.with(changes);
          versions.push([shared, model]);
        }
        for (const [version, expected] of versions) {
          for (let key = 0; key <= 40; key += 1) assert.equal(version.get(String(key)), expected.get(String(key)));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('Mailbox derivations equal a validated history', () => {
  const owner = ProcessId.parse('process:00000000000000000000000000000042');
  const schema = Schema.of({ type: 'object', required: ['ok'] });

  /** Facts a fresh `Mailbox.create` of the same records and cursor must agree with. */
  function assertSameAsCreated(mailbox: Mailbox): void {
    const created = Mailbox.create(mailbox.records(), mailbox.cursor);
    assert.equal(mailbox.json(), created.json());
    assert.equal((mailbox.toWire() as RawJson).byteLength, utf8Length(created.json()));
    assert.deepEqual(
      mailbox.waits().map((wait) => [wait.waitId.toString(), wait.openedAt, wait.answerIndex, wait.closed, wait.answerSchema !== undefined]),
      created.waits().map((wait) => [wait.waitId.toString(), wait.openedAt, wait.answerIndex, wait.closed, wait.answerSchema !== undefined]),
    );
    for (const record of created.records()) assert.equal(mailbox.indexOf(record.id), created.indexOf(record.id));
    assert.equal(Mailbox.parse(mailbox.json()).json(), mailbox.json(), 'the text decodes to itself');
  }

  test('appends of inputs, waits and answers, and consumes, in any interleaving', () => {
    // Each command appends the next few records of a script (an external wait opened, answered,
    // unaddressed input, settlements), or consumes some pending ones.
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 90 })), { minLength: 1, maxLength: 40 }), (commands) => {
        let mailbox = Mailbox.empty();
        let next = 0;
        let openWait: WaitId | undefined;
        let waitSerial = 0;
        for (const [append, amount] of commands) {
          if (!append) {
            mailbox = mailbox.consume(Math.min(amount, mailbox.pendingCount));
            assertSameAsCreated(mailbox);
            continue;
          }
          const batch: MailboxRecord[] = [];
          // A key's next wait opens only once the last one's answer was consumed.
          let answeredInBatch = false;
          for (let index = 0; index < amount; index += 1) {
            next += 1;
            const effect = EffectId.derive(owner, BigInt(next), 0);
            if (next % 7 === 0 && openWait === undefined && !answeredInBatch && !mailbox.openWaitFor(WaitKey.parse('question'))) {
              openWait = WaitId.derive(effect);
              waitSerial += 1;
              batch.push(MailboxRecord.waitOpening(openWait, { kind: 'external', key: WaitKey.parse('question'), answerSchema: schema, prompt: `q${waitSerial}` }));
            } else if (next % 5 === 0 && openWait !== undefined) {
              batch.push(MailboxRecord.external(SignalRequest.create({ id: `answer-${next}`, waitId: openWait, payload: Payload.encode({ ok: next }) })));
              openWait = undefined;
              answeredInBatch = true;
            } else if (next % 3 === 0) {
              batch.push(MailboxRecord.settlement(effect, Payload.encode({ n: next }), 'succeeded'));
            } else {
              batch.push(MailboxRecord.external(SignalRequest.create({ id: `input-${next}`, payload: Payload.encode({ n: next, pad: 'p'.repeat(next % 400) }) })));
            }
          }
          mailbox = mailbox.append(...batch);
          assertSameAsCreated(mailbox);
        }
      }),
      { numRuns: 60 },
    );
  });

  test('an append is refused exactly as a whole history would be', () => {
    const base = Mailbox.empty().append(MailboxRecord.external(SignalRequest.create({ id: 'input-1', payload: Payload.encode({}) })));
    const again = MailboxRecord.external(SignalRequest.create({ id: 'input-1', payload: Payload.encode({}) }));
    assert.throws(() => base.append(again), /record 1 repeats signal id input-1 \(first at record 0\)/);
    assert.throws(() => Mailbox.create([...base.records(), again], 0), /record 1 repeats signal id input-1 \(first at record 0\)/);
    const wait = WaitId.derive(EffectId.derive(owner, 1n, 0));
    const opened = base.append(MailboxRecord.waitOpening(wait, { kind: 'external', key: WaitKey.parse('question'), answerSchema: schema }));
    const wrong = MailboxRecord.external(SignalRequest.create({ id: 'answer', waitId: wait, payload: Payload.encode({ no: true }) }));
    assert.throws(() => opened.append(wrong), /answer schema rejects/);
    const right = MailboxRecord.external(SignalRequest.create({ id: 'answer', waitId: wait, payload: Payload.encode({ ok: true }) }));
    const answered = opened.append(right);
    assert.throws(() => answered.append(MailboxRecord.external(SignalRequest.create({ id: 'answer-2', waitId: wait, payload: Payload.encode({ ok: 1 }) }))), /answers .* again/);
    const second = WaitId.derive(EffectId.derive(owner, 2n, 0));
    assert.throws(() => answered.append(MailboxRecord.waitOpening(second, { kind: 'external', key: WaitKey.parse('question') })), /still open/);
    assertSameAsCreated(answered.consume(answered.pendingCount).append(MailboxRecord.waitOpening(second, { kind: 'external', key: WaitKey.parse('question') })));
  });
});

describe('A tree digest resumed across commits', () => {
  test('every committed head of a counter fed 600 signals hashes as its canonical bytes', async () => {
    const heads: TreeSnapshot[] = [];
    const committer = new MemoryTreeCommitter();
    const recording = {
      activateTree: async (...args: Parameters<MemoryTreeCommitter['activateTree']>) => {
        heads.push(args[0].snapshot);
        return committer.activateTree(...args);
      },
      commitEffect: async (...args: Parameters<MemoryTreeCommitter['commitEffect']>) => {
        heads.push(args[0].snapshot);
        return committer.commitEffect(...args);
      },
      commitCheckpoint: async (...args: Parameters<MemoryTreeCommitter['commitCheckpoint']>) => {
        heads.push(args[0].snapshot);
        return committer.commitCheckpoint(...args);
      },
    };
    const engine = new Engine({ committer: recording });
    const counter = Deployment.create({ definition: counterDefinition, implementationDigest: Digest.of('test:counter'), configurationDigest: Digest.of('test:counter') });
    try {
      const root = await engine.start(counter, Payload.encode({}));
      for (let sent = 0; sent < 600; sent += 1) {
        await root.deliverSignals(SignalRequest.create({ id: `add-${sent}`, payload: Payload.encode({ add: 1 }) }));
        if (sent % 50 === 49) await root.resume();
      }
      await root.deliverSignals(SignalRequest.create({ id: 'finish', payload: Payload.encode({ finish: true }) }));
      await root.resume();
      const result = await root.await();
      assert.equal(result.status, 'completed');
      assert.deepEqual(result.output?.decode(), { total: 600, count: 600 });
    } finally {
      await engine.close();
    }
    assert.ok(heads.length > 600, `${heads.length} commits`);
    for (const head of heads) {
      assert.ok(head.digest.equals(Digest.of(head.json())), 'the resumed digest is the sha256 of the canonical bytes');
      assert.ok(Tree.parse(head.json()).digest.equals(head.digest), 'and equals a fresh decode’s digest');
    }
  });
});
