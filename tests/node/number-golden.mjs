#!/usr/bin/env node
// Reads doubles from stdin as 16-hex-digit IEEE-754 bit patterns, one a line, and prints
// JSON.stringify of them as one array: the number text Node.js writes, for the Rust golden
// test of its JSON writer (tests/interop/json_numbers_golden.rs). No datastore needed.
import { readFileSync } from 'node:fs';

const lines = readFileSync(0, 'utf8').split('\n').filter(line => line.length > 0);
const bits = new BigUint64Array(lines.map(line => BigInt(`0x${line}`)));
const doubles = new Float64Array(bits.buffer);
process.stdout.write(JSON.stringify(Array.from(doubles)));
