#!/usr/bin/env node
// The JSON-lines echo worker: the bundled demo and test fixture of the process dispatcher
// (src/transport/process-dispatcher.ts). It speaks the protocol of src/transport/json-lines-protocol.ts:
//
//   worker → {"ready":true,"version":"1"}                 once started
//   host   → {"effectId":"…","payload":…}                 one line per Effect
//   worker → {"effectId":"…","status":"succeeded"|"failed","payload":…}
//
// It echoes each payload back as `succeeded`. Knobs, read from an object payload's members or from a
// `value` string "worker:<knob>" (so the echo example Definition, whose payload is {"value"}, reaches them):
//   fail          answer `failed` with {"error":"requested failure"}
//   hang          send a delta {"hanging":true} and never answer
//   crash         exit with code 70 without answering
//   delay_ms=N    answer after N ms (requests overlap)
// Start options: --start-delay-ms=N (handshake after N ms), --crash-on-start (exit 71 before the
// handshake), --version=V. The worker exits when its input ends, so it never outlives its host.
import { createInterface } from 'node:readline';

const options = Object.fromEntries(
  process.argv.slice(2).map((arg) => {
    const [name, value] = arg.replace(/^--/, '').split('=');
    return [name, value ?? true];
  }),
);

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function knobs(payload) {
  if (typeof payload !== 'object' || payload === null) return {};
  if (typeof payload.value === 'string' && payload.value.startsWith('worker:')) {
    const [name, value] = payload.value.slice('worker:'.length).split('=');
    return { [name]: value ?? true };
  }
  return payload;
}

function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    process.stderr.write(`jsonl-worker: ignoring a line that is not JSON\n`);
    return;
  }
  const { effectId, payload } = request;
  const knob = knobs(payload);
  if (knob.crash) {
    process.stderr.write(`jsonl-worker: crashing on ${effectId}\n`);
    process.exit(70);
  }
  if (knob.hang) {
    send({ effectId, delta: { hanging: true } });
    return;
  }
  const answer = () =>
    knob.fail
      ? send({ effectId, status: 'failed', payload: { error: 'requested failure' } })
      : send({ effectId, status: 'succeeded', payload });
  const delay = Number(knob.delay_ms ?? 0);
  if (delay > 0) setTimeout(answer, delay);
  else answer();
}

function start() {
  if (options['crash-on-start']) {
    process.stderr.write('jsonl-worker: crashing before the handshake\n');
    process.exit(71);
  }
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on('line', (line) => {
    if (line.length > 0) handle(line);
  });
  input.on('close', () => process.exit(0));
  send({ ready: true, version: String(options.version ?? '1') });
}

const startDelay = Number(options['start-delay-ms'] ?? 0);
if (startDelay > 0) setTimeout(start, startDelay);
else start();
