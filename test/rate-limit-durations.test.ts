// The x-ratelimit-reset-* duration format: OpenAI's (Go's) style, with the
// seconds rounded before the minutes are split off, so a round-up carries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { duration } from '../src/limits/gcra.js';

test('reset durations read as OpenAI writes them, carrying a rounded-up second into the minute', () => {
  const cases: Array<[number, string]> = [
    [0, '0ms'], [20, '20ms'], [999.2, '1s'], [1_000, '1s'], [1_500, '1.5s'], [20_040, '20s'],
    [59_940, '59.9s'], [59_950, '1m0s'], [59_999, '1m0s'], [60_000, '1m0s'], [60_050, '1m0.1s'],
    [90_500, '1m30.5s'], [119_960, '2m0s'], [120_000, '2m0s'], [179_980, '3m0s'], [1_199_600, '19m59.6s'],
    [3_599_960, '1h0m0s'], [3_600_000, '1h0m0s'], [12_030_500, '3h20m30.5s'],
  ];
  for (const [ms, want] of cases) assert.equal(duration(ms), want, `duration(${ms})`);
});
