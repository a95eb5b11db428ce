// The raw baseline's worker process (scripts/bench/transport.ts): a BullMQ Worker returning a small
// object for each job, nothing else. Args: <queue> <redis port> <concurrency>.
import { Worker } from 'bullmq';

const [queue, port, concurrency] = process.argv.slice(2);
const worker = new Worker(queue as string, async (job) => ({ ok: true, i: (job.data as { i: number }).i }), {
  connection: { host: '127.0.0.1', port: Number(port) },
  concurrency: Number(concurrency),
});
worker.on('error', (error) => console.error('raw worker error', error));
await worker.waitUntilReady();
console.log('raw worker ready');
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
