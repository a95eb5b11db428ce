import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/console-server.ts', '.', '300'], { stdio: ['pipe', 'pipe', 'inherit'] });
let url = '';
for await (const line of createInterface({ input: child.stdout! })) { if (line.startsWith('listening')) { url = line.split(' ')[1]!; break; } }
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const ctx = await browser.newContext(); const tab = await ctx.newPage();
await tab.goto(`${url}/#/processes`); await tab.waitForSelector('tbody tr td'); await tab.waitForTimeout(300);
console.log(await tab.evaluate(() => { const counts: Record<string, number> = {}; for (const el of document.querySelectorAll('*')) counts[el.tagName] = (counts[el.tagName] ?? 0) + 1; return JSON.stringify({ total: document.querySelectorAll('*').length, counts, htmlBytes: document.documentElement.outerHTML.length }); }));
console.log((await tab.content()).slice(0, 3000));
await browser.close(); child.stdin!.end();
