#!/usr/bin/env node
// `npx callbacks …`: the command-line client of the service's HTTP API.
import type { Output } from './cli.commands.js';
import { run } from './cli.run.js';

const io: Output = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text),
  tty: Boolean(process.stderr.isTTY),
};

void run(process.argv.slice(2), process.env, io).then((code) => {
  process.exitCode = code;
});
