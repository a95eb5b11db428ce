import { defaultModelScriptPath, loadModelScript } from '../server/model/server-model.js';
import { ScriptedModelServer } from '../server/model/scripted-model-server.js';

/**
 * `scope model-server [--port 3100] [--host 127.0.0.1] [--script file.json]`: runs the scripted
 * OpenAI-compatible model server (src/server/model/scripted-model-server.ts) until SIGTERM/SIGINT, so a
 * person can point Scope (SCOPE_MODEL_BASE_URL) or any OpenAI client at recorded conversations.
 * Without `--script` it replays the research agent's default script.
 */
export const modelServerUsage = `usage: scope model-server [--port <n>] [--host <address>] [--script <file.json>]

  --port     TCP port (default 3100; 0 = any free port)
  --host     listen address (default 127.0.0.1)
  --script   the conversations to replay (default: the research agent's script; format in docs/models.md)`;

interface ModelServerArguments {
  readonly port: number;
  readonly host: string;
  readonly script: string;
}

export function parseModelServerArguments(argv: readonly string[]): ModelServerArguments | { error: string } {
  let port = 3100;
  let host = '127.0.0.1';
  let script = defaultModelScriptPath;
  for (let index = 0; index < argv.length; index += 1) {
    const name = argv[index];
    const value = argv[index + 1];
    if (name !== '--port' && name !== '--host' && name !== '--script') return { error: `unknown argument ${JSON.stringify(name)}` };
    if (value === undefined || value.startsWith('--')) return { error: `${name} needs a value` };
    index += 1;
    if (name === '--port') {
      if (!/^\d+$/.test(value) || Number(value) > 65_535) return { error: `--port ${JSON.stringify(value)}: expected an integer in 0..65535` };
      port = Number(value);
    } else if (name === '--host') host = value;
    else script = value;
  }
  return { port, host, script };
}

/** Runs the command; resolves once the server listens (it then runs until a signal stops it). */
export async function modelServerCommand(argv: readonly string[], write: (text: string) => void): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    write(`${modelServerUsage}\n`);
    return 0;
  }
  const parsed = parseModelServerArguments(argv);
  if ('error' in parsed) {
    write(`scope: ${parsed.error}\n${modelServerUsage}\n`);
    return 2;
  }
  let server: ScriptedModelServer;
  try {
    server = await ScriptedModelServer.start({ script: await loadModelScript(parsed.script), port: parsed.port, host: parsed.host });
  } catch (error) {
    write(`scope: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  write(`scripted model server listening: SCOPE_MODEL_BASE_URL=${server.baseUrl} (script ${parsed.script})\n`);
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return 0;
}
