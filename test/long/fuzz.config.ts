// `npm run test:fuzz`: the long runs' configuration, with the worker (which runs
// the server the fuzzers attack) under npm start's V8 memory settings. The
// GraphQL fuzzer bounds the process's RSS growth; under Node's default heap, V8
// let a run grow by 1.1–1.2 GB before collecting (the same seed with the
// settings users run: +439 MB), which measured V8's laziness, not the server.
import { readFileSync } from 'node:fs';
import { defineConfig, mergeConfig } from 'vitest/config';
import long from './vitest.config.ts';

const start = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts.start as string;
const v8Settings = start.split(/\s+/).filter((arg) => arg.startsWith('--max-'));

export default mergeConfig(long, defineConfig({ test: { execArgv: v8Settings } }));
