import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { connect } from 'node:net';
import { httpChunk, SseWriter, type FrameBatch } from '../../plugins/stream/sse-writer.js';

/** A frame per text, as the stream plugin encodes them, and their concatenation. */
function framesOf(...texts: string[]): FrameBatch {
  const frames = texts.map((text, index) => Buffer.from(`id: ${index + 1}\nevent: agent.delta\ndata: ${JSON.stringify({ text })}\n\n`));
  return { frames, bytes: Buffer.concat(frames) };
}

/**
 * A real HTTP server whose one response is an SseWriter (3 messages of buffer at most) handed to
 * `serve`; resolves with the whole body the client read and what `serve` returned.
 */
async function exchange<T>(serve: (writer: SseWriter, res: ServerResponse) => T, http10 = false): Promise<{ body: string; result: T }> {
  let result: T | undefined;
  const server = createServer((_req, res) => {
    const writer = new SseWriter(res, { maxBufferEntries: 3, maxBufferBytes: 64 * 1024, keepAliveMs: 60_000, lingerMs: 1_000, retryMs: 100 });
    writer.open({});
    result = serve(writer, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    if (http10) {
      // HTTP/1.0 has no chunked bodies: the response is delimited by the end of the connection.
      const socket = connect(port, '127.0.0.1');
      socket.end('GET / HTTP/1.0\r\n\r\n');
      let raw = '';
      socket.setEncoding('utf8').on('data', (text: string) => {
        raw += text;
      });
      await once(socket, 'close');
      assert.match(raw, /^HTTP\/1\.1 200 /);
      assert.equal(/transfer-encoding/i.test(raw.slice(0, raw.indexOf('\r\n\r\n'))), false);
      return { body: raw.slice(raw.indexOf('\r\n\r\n') + 4), result: result as T };
    }
    const response = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    return { body: await response.text(), result: result as T };
  } finally {
    server.close();
  }
}

/** Counts the response's writes from now on. */
function countWrites(res: ServerResponse): { readonly count: number } {
  const counter = { count: 0 };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  res.write = ((...args: unknown[]) => {
    counter.count += 1;
    return write(...args);
  }) as typeof res.write;
  return counter;
}

test('SSE writer: a batch of frames is one write to the response, and arrives whole and in order', async () => {
  const batch = framesOf('a', 'b', 'c');
  const { body, result } = await exchange((writer, res) => {
    const writes = countWrites(res);
    const written = writer.sendFrames(batch);
    const writesOfBatch = writes.count;
    writer.end({ event: 'scope.stream.end', data: { reason: 'completed' } });
    return { written, writesOfBatch, state: writer.state };
  });
  assert.deepEqual(result, { written: 3, writesOfBatch: 1, state: 'ended' });
  assert.equal(body, `retry: 100\n\n${batch.bytes.toString()}event: scope.stream.end\ndata: {"reason":"completed"}\n\n`);
});

test('SSE writer: a batch larger than the buffer bound writes the frames that fit, then drops the client with slow_client', async () => {
  const batch = framesOf('a', 'b', 'c', 'd', 'e');
  const { body, result } = await exchange((writer) => ({ written: writer.sendFrames(batch), dropReason: writer.dropReason, again: writer.sendFrames(framesOf('f')) }));
  // Nothing owed: the first always fits; each later one counts as owed until the socket takes the write.
  assert.deepEqual(result, { written: 3, dropReason: 'slow_client', again: 0 });
  const events = body.split('\n\n').filter((block) => block.length > 0);
  assert.deepEqual(events.slice(1, 4), batch.frames.slice(0, 3).map((frame) => frame.toString().trimEnd()), 'the frames that fit, in order');
  assert.equal(events.length, 5, `retry, three frames, the drop: ${JSON.stringify(events)}`);
  const drop = events[4] as string;
  assert.match(drop, /^event: scope\.stream\.error\ndata: /);
  assert.equal(drop.includes('id:'), false, 'the drop never moves Last-Event-ID');
  const data = JSON.parse(drop.slice(drop.indexOf('data: ') + 6)) as Record<string, unknown>;
  assert.equal(data.reason, 'slow_client');
  assert.equal(data.pendingEntries, 3);
  assert.equal(data.maxBufferEntries, 3);
});

test('SSE writer: what a client owes from earlier writes counts against a batch', async () => {
  const { body, result } = await exchange((writer) => {
    // Two single writes in one turn: both still owed when the batch comes (no I/O in between).
    const singles = [writer.sendFrames(framesOf('a')), writer.sendFrames(framesOf('b'))];
    return { singles, batch: writer.sendFrames(framesOf('c', 'd')), dropReason: writer.dropReason };
  });
  assert.deepEqual(result, { singles: [1, 1], batch: 1, dropReason: 'slow_client' });
  assert.equal((body.match(/^event: agent\.delta$/gm) ?? []).length, 3);
});

test('SSE writer: a batch framed in advance goes to the socket as the bytes res.write sends, in order with the writes around it', async () => {
  const plain = framesOf('a', 'b');
  const batch: FrameBatch = { ...plain, chunk: httpChunk(plain.bytes) };
  const { body, result } = await exchange((writer, res) => {
    writer.send({ event: 'scope.stream.notice', data: { n: 1 } });
    const writes = countWrites(res);
    const written = writer.sendFrames(batch);
    const writesOfBatch = writes.count;
    writer.end({ event: 'scope.stream.end', data: { reason: 'completed' } });
    return { written, writesOfBatch };
  });
  assert.deepEqual(result, { written: 2, writesOfBatch: 0 }, 'the batch went to the socket, not through res.write');
  assert.equal(
    body,
    `retry: 100\n\nevent: scope.stream.notice\ndata: {"n":1}\n\n${plain.bytes.toString()}event: scope.stream.end\ndata: {"reason":"completed"}\n\n`,
  );
});

test('SSE writer: on a response that is not chunked (HTTP/1.0) a framed batch is written through the response', async () => {
  const plain = framesOf('a', 'b');
  const { body, result } = await exchange((writer, res) => {
    const writes = countWrites(res);
    const written = writer.sendFrames({ ...plain, chunk: httpChunk(plain.bytes) });
    const writesOfBatch = writes.count;
    writer.end({ event: 'scope.stream.end', data: {} });
    return { written, writesOfBatch };
  }, true);
  assert.deepEqual(result, { written: 2, writesOfBatch: 1 });
  assert.equal(body, `retry: 100\n\n${plain.bytes.toString()}event: scope.stream.end\ndata: {}\n\n`);
});
