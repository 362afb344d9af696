#!/usr/bin/env node
// Dumps the runtime artefacts of the pinned npm bullmq@6.7.6 as one JSON object,
// read through bullmq's own modules (not by re-reading the repository files):
//
//   lua:           "<name>-<keys>" -> {keys, sha1, content} for every Lua script
//                  bullmq registers with ioredis `defineCommand`; sha1 is computed
//                  the way ioredis does it (sha1 hex of the lua string as UTF-8),
//                  i.e. the EVALSHA digest Redis will see.
//   sqlCommands:   "<file>.sql" -> text   (dist/cjs/postgres/sql-scripts.js SQL_COMMANDS)
//   sqlMigrations: "<file>.sql" -> text   (SQL_MIGRATIONS)
//   migrations:    [{version, name, minClientVersion}]  (postgres/migrations MIGRATIONS)
//
// Usage: node upstream-dump.mjs > upstream.json
// No Redis or Postgres connection is needed.

import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';

const require = createRequire(import.meta.url);
const scripts = require('bullmq/dist/cjs/scripts/index.js');
const { SQL_COMMANDS, SQL_MIGRATIONS } = require('bullmq/dist/cjs/postgres/sql-scripts.js');
const { MIGRATIONS } = require('bullmq/dist/cjs/postgres/migrations/index.js');
const { version } = require('bullmq/package.json');

const sha1 = text => createHash('sha1').update(text, 'utf8').digest('hex');
const sortedEntries = obj => Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

const lua = {};
for (const [, script] of sortedEntries(scripts)) {
  const key = `${script.name}-${script.keys}`;
  if (lua[key]) throw new Error(`duplicate script ${key}`);
  lua[key] = { keys: script.keys, sha1: sha1(script.content), content: script.content };
}

const out = {
  bullmqVersion: version,
  lua,
  sqlCommands: Object.fromEntries(sortedEntries(SQL_COMMANDS)),
  sqlMigrations: Object.fromEntries(sortedEntries(SQL_MIGRATIONS)),
  migrations: MIGRATIONS.map(({ version: v, name, minClientVersion }) => ({
    version: v,
    name,
    minClientVersion,
  })),
};

process.stdout.write(JSON.stringify(out, null, 2) + '\n');
