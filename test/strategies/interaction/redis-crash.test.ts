import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadModelScript, defaultModelScriptPath } from '../../../src/server/model/server-model.js';
import { ScriptedModelServer } from '../../../src/server/model/scripted-model-server.js';
import { crashFixture, post, readLog, resultOf, startProcess, stop, treeOf, type LogEntry } from '../../helpers/crash-harness.js';

/**
 * example.agent.research survives a SIGKILLed `scope serve` (Redis mode) between the model's answer
 * and a tool's settlement: the first model call has settled and its search child has run, the
 * ask_human child waits for a person — then the server is killed. A second server takes the tree
 * over: the model is NOT called again for the settled turn (the scripted model server, run by this
 * test, records every call), the search child — its dispatcher's replay policy is `never` — is not
 * run again, and the wait, answered on the new server, completes the run with one model call per
 * turn in all.
 */

const { serve } = crashFixture();
let model: ScriptedModelServer;

before(async () => {
  model = await ScriptedModelServer.start({ script: await loadModelScript(defaultModelScriptPath) });
});
after(async () => {
  await model?.close();
});

const env = (): Record<string, string> => ({ SCOPE_MODEL_BASE_URL: model.baseUrl, SCOPE_MODEL: 'scripted', SCOPE_MODEL_API_KEY_ENV: 'SCOPE_TEST_RESEARCH_KEY', SCOPE_TEST_RESEARCH_KEY: 'crash-test-key' });

interface Wait {
  readonly processId: string;
  readonly rootId: string;
  readonly waitId: string;
  readonly key: string;
}

/** Polls the server's reads (not a synchronisation sleep: each round re-reads the state it waits for). */
async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    assert.ok(performance.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const waitsOf = async (url: string): Promise<Wait[]> => ((await (await fetch(`${url}/v1/waits`)).json()) as { items: Wait[] }).items;

test('example.agent.research SIGKILLed between the model answer and a tool settlement: no second model call for the turn, the never-replay search does not run twice', async () => {
  const prefix = `interactioncrash${process.pid}`;
  const first = await serve(prefix, env());
  const rootId = await startProcess(first.url, 'example.agent.research', { task: 'How does Scope keep an agent safe across crashes?' });

  // The moment: turn 1's model call settled, its search child completed, the ask_human child waits.
  const tree = await poll(
    () => treeOf(first.url, rootId),
    (view) => view.processes.filter((entry) => entry.parentId === rootId).map((entry) => entry.status).sort().join(',') === 'completed,waiting',
    'the search child completed and the ask_human child waits',
  );
  const children = tree.processes.filter((entry) => entry.parentId === rootId);
  assert.equal(model.requests.length, 1, 'one model call so far');
  await stop(first, 'SIGKILL');

  // At the kill the tree is parked (the root awaits its children, ask_human awaits a person): it is
  // taken over only if it still had work, else the answer below restores it where it lands.
  const second = await serve(prefix, env());
  const waits = await poll(() => waitsOf(second.url), (items) => items.some((wait) => wait.rootId === rootId), 'the ask_human wait is listed on the new server');
  const wait = waits.find((entry) => entry.rootId === rootId) as Wait;
  assert.equal(wait.key, 'toolset.ask.ask_human');
  assert.ok(children.some((entry) => entry.processId === wait.processId), 'the same tool child, restored');
  assert.equal(model.requests.length, 1, 'the restart did not call the model again for the settled turn');

  const answered = await post(`${second.url}/v1/processes/${encodeURIComponent(wait.processId)}/signals`, { signals: [{ id: 'answer-1', waitId: wait.waitId, payload: { answer: 'safety' } }] });
  assert.equal(answered.status, 200, await answered.text());
  const result = await resultOf<string>(second.url, rootId);
  assert.equal(result.status, 'completed', JSON.stringify(result));
  assert.equal(model.requests.length, 3, 'one model call per turn across the crash');

  // Every tool child published once, finished once; each search dispatch began once.
  const log = await readLog(second.url, rootId);
  const of = (type: string, processId: string) => log.filter((entry: LogEntry) => entry.type === type && entry.processId === processId);
  const finalTree = await treeOf(second.url, rootId);
  const toolChildren = finalTree.processes.filter((entry) => entry.parentId === rootId);
  assert.equal(toolChildren.length, 3);
  for (const child of toolChildren) {
    assert.equal(of('agent.process.started', child.processId).filter((entry) => entry.data.phase === 'committed').length, 1, `${child.processId} published once`);
    assert.equal(of('agent.process.finished', child.processId).filter((entry) => entry.data.phase === 'committed').length, 1, `${child.processId} finished once`);
  }
  const search = children.find((entry) => entry.status === 'completed') as { processId: string };
  assert.equal(of('agent.effect.started', search.processId).length, 1, 'the never-replay search of turn 1 was dispatched once, before the crash, and not again');
  await stop(second, 'SIGTERM');
});
