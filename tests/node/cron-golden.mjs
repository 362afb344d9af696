#!/usr/bin/env node
// Golden run times from cron-parser (the version bullmq 6.7.6 depends on, resolved through
// bullmq's own require so it is the pinned one), for the Rust cron engine to reproduce.
//
// Prints one JSON line per case:
//   {"pattern","tz","currentDate","startDate","endDate","hashSeed",
//    "iter": [ms…] | {"error": msg},   // next() 20 times on one parsed expression
//    "chain": [ms…] | {"error": msg} | null}  // 20 fresh parses, each from the previous run
//                                      // time, as bullmq's workers compute each iteration
// A list shorter than 20 ends where cron-parser stopped (end date, no further match).
import { createRequire } from 'node:module';

const require = createRequire(createRequire(import.meta.url).resolve('bullmq'));
const { CronExpressionParser } = require('cron-parser');

const COUNT = 20;

// Accepted patterns: every field form, names, L and #, seconds, steps over ranges, Sunday 7,
// the day-of-month / day-of-week OR rule, and hours that DST changes skip or repeat.
const patterns = [
  '* * * * *', '*/5 * * * *', '0 * * * *', '0 0 * * *', '30 2 * * *', '0 2 * * *',
  '0 1 * * *', '30 1 * * *', '15 3 * * *', '0 0,12 * * *', '0 */2 * * *', '0 1-3 * * *',
  '59 23 * * *', '0 0 1 * *', '0 0 L * *', '0 12 15,L * *', '0 0 31 * *', '0 0 29 2 *',
  '0 0 30 * *', '0 9 * * 1-5', '0 9 * * mon-fri', '0 9 * * MON,WED,FRI', '0 0 * * 0',
  '0 0 * * 7', '0 0 * * 5-7', '0 0 * * 0-7/2', '0 0 * * 1-7/2', '0 0 * * */2', '0 0 * * 6,7',
  '0 0 * * sun', '0 0 * * 5L', '0 18 * * fri#2', '0 0 * * 1#1', '0 0 * * 0#5', '0 0 * * 5#3',
  '0 0 * * 7#1', '0 0 1 * 1', '0 0 13 * 5', '0 0 1,15 * 3', '0 0 */10 * 1',
  '0 0 * jan *', '0 0 1 jan,jul *', '0 0 1 JAN-MAR *', '0 0 1 */3 *', '0 0 L 2 *',
  '0 0 * 2 *', '5/15 * * * *', '10-40/10 * * * *', '0 5/6 * * *',
  '0 0 2-20/3 * *', '0 0 ? * 1', '0 0 1 * ?', '*/1 * * * *', '0 0 */1 * 1',
  '0 0 * * 1,1-1', '0 30 9-17/2 * * 1-5', '0 0 12 * * *', '* * * * * *', '*/10 * * * * *',
  '30 * * * * *', '0,30 * * * * *', '15-45/15 */3 * * * *', '0 0 2 * * *', '0 30 2 * * *',
  '0 0 0 L * *', '0 0 12 ? * 5L', '@daily', '@hourly', '@weekly', '@monthly', '@yearly',
  '@weekdays', '@weekends', '@minutely', '0 0 0 1 1 *', '45 1 * * *', '0 3 * * *',
  '0 0 * * 1L', '0 0 5L * *', '0 0 1-5L * *', '0 0 L * 5', '0 2,3 * * *', '0 1,2 * * *',
  '30 0-4 * * *', '0 23 * * *', '0 0 ? * 0L', '0 0 1 1 *', '0 0 15 8 *', '0 0 31 12 *',
  '17 */7 * * *', '0 0 * * 2#4', '1 2 3 4 5', '59 59 23 31 12 *',
  '  0   12  *  *  *  ', '0 12 * *', '12 * *', '5', '0 0 * * 3-3', '7-7 * * * *',
  '0 0 6/7 * *', '0 0 1 1-12/4 *', '0 0 * 2-3 7', '0 0 1-7 * 1', '0 0 25 12 *',
  '*/7 */7 * * *', '0 0/30 * * * *', '0 22 * * 0', '0 2 * * 0', '30 2 * 3 0',
  '0 H * * *', 'H H * * *', 'H(0-29)/10 * * * *', '0 H/6 * * *', '0 0 H(1-28) * *',
];

// Patterns cron-parser refuses; the Rust engine must refuse them too.
const rejected = [
  '* * * * * * *', '60 * * * *', '* 24 * * *', '* * 32 * *', '* * 0 * *', '* * * 13 *',
  '* * * 0 *', '* * * * 8', '*/0 * * * *', '5-1 * * * *', '1,,2 * * * *', '1,1 * * * *',
  '0 0 * * 0,7', '0 0 * * 7,0', '0 0 * * 1-7,0', '0 0 * foo *', '0 0 * * sunday',
  '0 0 LW * *', '0 0 15W * *', '0 0 * * L', '0 0 * * 1#6', '0 0 * * 1#0', '0 0 * * 1-5#2',
  '0 0 * * 1#2#3', '0 0 30 2 *', '0 0 31 4 *', '0 0 31 11 *', 'a b c d e', '* * * * ? ?x',
  '0 0 * * 1/0', '1-2/ * * * *', '/5 * * * *', '5/ * * * *', '1/2/3 * * * *', '-1 * * * *',
  '0 0 * * #1', '0 0 1-L * *', '* * * * * 1,', ',1 * * * *', '0 0 123L * *', '0 0 * * 8L',
  '0 0 L-2 * *', '0 0 ? * jan#2x', '0 0 * * 5#', '   ', '0 0 * * 1 2 3 4 5', 'H(5-1) * * * *',
  '0 0 * * * 5L', '0 0 * * MON-SUN', '0 0 1 1 jan', '0 0 1 sun *', '0 0 1 mon *',
  '0 0 * * sat-jan', '0 0 1-2-3 * *', '0 0 * * 1-3-5', '1-2-3/2 * * * *',
];

const zones = [
  'UTC', 'America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kolkata',
  'Pacific/Chatham', 'America/St_Johns', 'Asia/Kathmandu', 'America/Havana',
  'America/Santiago', 'Pacific/Auckland', 'Europe/Berlin', 'America/Los_Angeles',
];

// Search starts: just before spring-forward and fall-back changes of these zones (2024/2025),
// month and year ends, a leap day, and instants with milliseconds.
const starts = [
  Date.UTC(2024, 0, 1, 0, 0, 0),
  Date.UTC(2024, 1, 28, 13, 17, 42, 123),
  Date.UTC(2024, 2, 9, 12, 0, 0), // New York, Havana spring forward 2024-03-10
  Date.UTC(2024, 2, 30, 20, 0, 0), // London, Berlin spring forward 2024-03-31
  Date.UTC(2024, 3, 6, 10, 0, 0), // Lord Howe, Auckland, Chatham, Santiago fall back 2024-04-07
  Date.UTC(2024, 8, 6, 10, 0, 0), // Santiago spring forward 2024-09-08 (midnight)
  Date.UTC(2024, 8, 28, 10, 0, 0), // Auckland, Chatham spring forward 2024-09-29
  Date.UTC(2024, 9, 5, 10, 0, 0), // Lord Howe spring forward 2024-10-06
  Date.UTC(2024, 9, 26, 20, 0, 0), // London, Berlin fall back 2024-10-27
  Date.UTC(2024, 10, 2, 12, 0, 0), // New York, Havana fall back 2024-11-03
  Date.UTC(2025, 2, 8, 23, 59, 59, 999), // New York spring forward 2025-03-09
  Date.UTC(2025, 11, 31, 23, 30, 0, 1),
];

function run(pattern, options, chained) {
  const iter = (() => {
    try {
      const expr = CronExpressionParser.parse(pattern, options);
      const out = [];
      for (let i = 0; i < COUNT; i++) {
        try {
          out.push(expr.next().getTime());
        } catch {
          break;
        }
      }
      return out;
    } catch (e) {
      return { error: e.message };
    }
  })();
  const chain = (() => {
    if (!chained) {
      return null;
    }
    const out = [];
    let current = options.currentDate;
    for (let i = 0; i < COUNT; i++) {
      let expr;
      try {
        expr = CronExpressionParser.parse(pattern, { ...options, currentDate: current });
      } catch (e) {
        return { error: e.message };
      }
      try {
        current = expr.next().getTime();
      } catch {
        break;
      }
      out.push(current);
    }
    return out;
  })();
  return { iter, chain };
}

function emit(pattern, options, chained = true) {
  const { iter, chain } = run(pattern, options, chained);
  const line = {
    pattern,
    tz: options.tz ?? null,
    currentDate: options.currentDate,
    startDate: options.startDate ?? null,
    endDate: options.endDate ?? null,
    hashSeed: options.hashSeed ?? null,
    iter,
    chain,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
}

// Every pattern in every zone, from two of the starts (a different two per pattern and zone,
// so that together they cover every start in every zone); the chained form from the first.
// Patterns that run once a year or so cost cron-parser a day step per day: fewer zones.
const yearly = new Set([
  '0 0 1 1 *', '0 0 29 2 *', '0 0 31 12 *', '0 0 25 12 *', '0 0 15 8 *', '@yearly',
  '0 0 0 1 1 *', '59 59 23 31 12 *', '0 0 L 2 *', '0 0 * * 0#5', '30 2 * 3 0', '0 0 1 jan,jul *',
  '0 0 1 1-12/4 *', '0 0 29 2 1', '0 0 31 4,6 *', '0 0 1 1 *', '1 2 3 4 5', '0 0 1 JAN-MAR *',
]);
patterns.forEach((pattern, p) => {
  const hashSeed = pattern.includes('H') ? 'scheduler-42' : undefined;
  zones.forEach((tz, z) => {
    if (yearly.has(pattern) && z % 4 !== 0) {
      return;
    }
    for (let k = 0; k < 2; k++) {
      const currentDate = starts[(p + z + 5 * k) % starts.length];
      emit(pattern, { tz, currentDate, hashSeed }, k === 0);
    }
  });
});
// Patterns that (almost) never match make cron-parser walk its 10,000-step limit: a few starts.
for (const pattern of ['0 0 31 4,6 *', '0 0 29 2 1', '0 0 31 2,4 1#5']) {
  for (const tz of ['UTC', 'America/New_York']) {
    emit(pattern, { tz, currentDate: starts[0] });
  }
}

// Start and end dates: the search starts at the later of start date and current date, and
// stops past the end date.
const spans = [
  { currentDate: Date.UTC(2024, 0, 1), startDate: Date.UTC(2024, 5, 1, 0, 0, 30) },
  { currentDate: Date.UTC(2024, 6, 1), startDate: Date.UTC(2024, 5, 1) },
  { currentDate: Date.UTC(2024, 0, 1), endDate: Date.UTC(2024, 0, 1, 5, 0, 0) },
  { currentDate: Date.UTC(2024, 0, 10), endDate: Date.UTC(2024, 0, 1) },
  { currentDate: Date.UTC(2024, 0, 1), startDate: Date.UTC(2024, 2, 9), endDate: Date.UTC(2024, 2, 12) },
  // 0 is the epoch, not a missing date.
  { currentDate: Date.UTC(2024, 0, 1), startDate: 0 },
  { currentDate: Date.UTC(2024, 0, 1), endDate: 0 },
  { currentDate: 0, startDate: Date.UTC(2024, 0, 1) },
];
for (const pattern of ['0 * * * *', '*/20 * * * *', '0 2 * * *', '30 2 * * *', '0 0 L * *']) {
  for (const tz of ['UTC', 'America/New_York', 'Australia/Lord_Howe']) {
    for (const span of spans) {
      emit(pattern, { tz, ...span });
    }
  }
}

// Unknown time zones are refused at parse time.
for (const tz of ['Mars/Olympus_Mons', 'America/NewYork', 'EST+5']) {
  emit('0 0 * * *', { tz, currentDate: starts[0] });
}
// Zone names in other spellings luxon accepts.
for (const tz of ['utc', 'europe/london', 'UTC+5:30', 'UTC-3', 'GMT', 'Etc/GMT+5', 'US/Eastern']) {
  emit('30 2 * * *', { tz, currentDate: starts[2] });
}

for (const pattern of rejected) {
  emit(pattern, { tz: 'UTC', currentDate: starts[0] });
}
