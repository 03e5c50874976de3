/*
 * format.test.js - web/js/00-format.js (Fmt): numbers, units, durations,
 * times, ranges, report periods and resources, with their edge cases
 * (null, negative, zero, rounding, month ends, ISO weeks).
 *
 * Local times are checked in America/New_York (a zone with daylight
 * saving time), set before the first Date is made.
 */
'use strict';

process.env.TZ = 'America/New_York';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const Fmt = require(path.join(__dirname, '..', 'js', '00-format.js'));

const NB = '\u00a0';    /* between a figure and its unit */
const DASH = '\u2014';  /* what is not known */

test('num: grouping, decimals, trailing zeros, rounding', () => {
    assert.equal(Fmt.num(1234.5), '1,234.5');
    assert.equal(Fmt.num(1234.5678), '1,234.57');
    assert.equal(Fmt.num(-1234.5678), '-1,234.57');
    assert.equal(Fmt.num(2.5, 0), '3');
    assert.equal(Fmt.num(1.10), '1.1');
    assert.equal(Fmt.num(0), '0');
    assert.equal(Fmt.num(0.125, 3), '0.125');
    assert.equal(Fmt.num(1e21), '1,000,000,000,000,000,000,000');
});

test('num: a small negative rounded to zero is "0", never "-0"', () => {
    assert.equal(Fmt.num(-0.004), '0');
    assert.equal(Fmt.num(-0), '0');
    assert.equal(Fmt.int(-0.4), '0');
    assert.equal(Fmt.money(-0.004), '0.00');
    assert.equal(Fmt.pct(-0.00001), '0' + NB + '%');
    assert.equal(Fmt.num(-0.005), '-0.01');
});

test('num and friends: null, undefined, NaN, Infinity and strings are unknown', () => {
    for (const v of [null, undefined, NaN, Infinity, -Infinity])
        assert.equal(Fmt.num(v), DASH, String(v));
    assert.equal(Fmt.num('12'), DASH);
    for (const f of ['int', 'pct', 'bytes', 'gpus', 'money', 'co2', 'duration', 'milli', 'kwh'])
        assert.equal(Fmt[f](null), DASH, f + '(null)');
    for (const f of ['pct', 'bytes', 'money', 'co2', 'duration'])
        assert.equal(Fmt[f](NaN), DASH, f + '(NaN)');
});

test('int and pct', () => {
    assert.equal(Fmt.int(1234.5), '1,235');
    assert.equal(Fmt.int(999999.4), '999,999');
    assert.equal(Fmt.pct(0.423), '42.3' + NB + '%');
    assert.equal(Fmt.pct(0.4236), '42.4' + NB + '%');
    assert.equal(Fmt.pct(0.4236, 2), '42.36' + NB + '%');
    assert.equal(Fmt.pct(0), '0' + NB + '%');
    assert.equal(Fmt.pct(1), '100' + NB + '%');
    assert.equal(Fmt.pct(1.5), '150' + NB + '%');
    assert.equal(Fmt.pct(-0.05), '-5' + NB + '%');
});

test('bytes: binary units, one decimal below 10', () => {
    assert.equal(Fmt.bytes(0), '0' + NB + 'B');
    assert.equal(Fmt.bytes(1023), '1,023' + NB + 'B');
    assert.equal(Fmt.bytes(1024), '1' + NB + 'KiB');
    assert.equal(Fmt.bytes(1536), '1.5' + NB + 'KiB');
    assert.equal(Fmt.bytes(10 * 1024 - 1), '10' + NB + 'KiB');
    assert.equal(Fmt.bytes(15 * 1024 + 512), '16' + NB + 'KiB');
    assert.equal(Fmt.bytes(80 * 1024 ** 3), '80' + NB + 'GiB');
    assert.equal(Fmt.bytes(81559 * 1024 ** 2), '80' + NB + 'GiB');
    assert.equal(Fmt.bytes(-2048), '-2' + NB + 'KiB');
    assert.equal(Fmt.bytes(5 * 1024 ** 6), '5,120' + NB + 'PiB');
});

test('GPUs and milli-GPUs', () => {
    assert.equal(Fmt.gpus(8), '8');
    assert.equal(Fmt.gpus(1.5), '1.5');
    assert.equal(Fmt.gpus(0.25), '0.25');
    assert.equal(Fmt.milli(250), '0.25');
    assert.equal(Fmt.milli(1), '0.001');
    assert.equal(Fmt.milli(0), '0');
    assert.equal(Fmt.milli(8000), '8');
    assert.equal(Fmt.milli(undefined), DASH);
});

test('money, energy and CO2', () => {
    assert.equal(Fmt.money(12.5, 'EUR'), '12.50' + NB + 'EUR');
    assert.equal(Fmt.money(12.345), '12.35');
    assert.equal(Fmt.money(1234567.891, 'USD'), '1,234,567.89' + NB + 'USD');
    assert.equal(Fmt.money(0, 'USD'), '0.00' + NB + 'USD');
    assert.equal(Fmt.money(-3.5, 'USD'), '-3.50' + NB + 'USD');
    assert.equal(Fmt.kwh(12.3456), '12.346' + NB + 'kWh');
    assert.equal(Fmt.kwh(0), '0' + NB + 'kWh');
    assert.equal(Fmt.co2(0.5), '500' + NB + 'g');
    assert.equal(Fmt.co2(0.9999), '999.9' + NB + 'g');
    assert.equal(Fmt.co2(0), '0' + NB + 'g');
    assert.equal(Fmt.co2(1), '1' + NB + 'kg');
    assert.equal(Fmt.co2(1234.567), '1,234.57' + NB + 'kg');
    assert.equal(Fmt.co2(-0.25), '-250' + NB + 'g');
});

test('duration: the two largest units, milliseconds below a second', () => {
    assert.equal(Fmt.duration(3725), '1h 2m');
    assert.equal(Fmt.duration(42), '42s');
    assert.equal(Fmt.duration(60), '1m');
    assert.equal(Fmt.duration(3600), '1h');
    assert.equal(Fmt.duration(86400), '1d');
    assert.equal(Fmt.duration(90061), '1d 1h');
    assert.equal(Fmt.duration(400 * 86400), '400d');
    assert.equal(Fmt.duration(0.25), '250ms');
    assert.equal(Fmt.duration(0.0015), '2ms');
});

test('duration: "1h" rather than "1h 0m", seconds cut, not rounded up', () => {
    assert.equal(Fmt.duration(3601), '1h');
    assert.equal(Fmt.duration(7259), '2h');
    assert.equal(Fmt.duration(3660), '1h 1m');
    assert.equal(Fmt.duration(59.9), '59s');
});

test('duration: zero, negatives and the edge of a second', () => {
    assert.equal(Fmt.duration(0), '0s');
    assert.equal(Fmt.duration(-0.0001), '0s');
    assert.equal(Fmt.duration(0.0004), '0s');
    assert.equal(Fmt.duration(0.9996), '1s');
    assert.equal(Fmt.duration(0.9994), '999ms');
    assert.equal(Fmt.duration(1), '1s');
    assert.equal(Fmt.duration(-90), '-1m 30s');
    assert.equal(Fmt.duration(-0.5), '-500ms');
});

test('time: local by default, UTC when asked, unknown for 0, negative, null', () => {
    /* 2026-03-08 is the day New York moves to daylight saving time at
     * 02:00 local: 06:59:59 UTC is 01:59:59 EST, a second later 03:00:00 EDT. */
    const t = Date.UTC(2026, 2, 8, 6, 59, 59);
    assert.equal(Fmt.time(t), '2026-03-08 01:59:59');
    assert.equal(Fmt.time(t + 1000), '2026-03-08 03:00:00');
    assert.equal(Fmt.time(t, true), '2026-03-08 06:59:59');
    assert.equal(Fmt.time(Date.UTC(2027, 0, 1, 4, 5, 6), true), '2027-01-01 04:05:06');
    /* Before midnight UTC on New Year's Eve in New York: still the old year. */
    assert.equal(Fmt.time(Date.UTC(2027, 0, 1, 4, 59, 59)), '2026-12-31 23:59:59');
    for (const v of [0, -5, null, undefined, NaN])
        assert.equal(Fmt.time(v), DASH, String(v));
});

test('ago: past, future, now, unknown', () => {
    assert.equal(Fmt.ago(1000, 61000), '1m ago');
    assert.equal(Fmt.ago(61000, 1000), 'in 1m');
    assert.equal(Fmt.ago(1000, 1500), 'now');
    assert.equal(Fmt.ago(1000, 1000 + 3725000), '1h 2m ago');
    assert.equal(Fmt.ago(null, 5), DASH);
    assert.equal(Fmt.ago(0, 5), DASH);
    const now = Date.now();
    assert.equal(Fmt.ago(now - 120000), '2m ago');
});

test('day: the UTC date, whatever the local zone', () => {
    assert.equal(Fmt.day(Date.UTC(2026, 0, 31, 23, 59, 59, 999)), '2026-01-31');
    assert.equal(Fmt.day(Date.UTC(2026, 1, 1)), '2026-02-01');
    assert.equal(Fmt.day(0), '1970-01-01');
});

test('range: the named history ranges end now', () => {
    const now = Date.UTC(2026, 11, 2, 12);
    assert.deepEqual(Fmt.range('hour', now), {from: now - 3600e3, to: now});
    assert.deepEqual(Fmt.range('day', now), {from: now - 86400e3, to: now});
    assert.deepEqual(Fmt.range('week', now), {from: now - 7 * 86400e3, to: now});
    assert.deepEqual(Fmt.range('month', now), {from: now - 30 * 86400e3, to: now});
    const r = Fmt.range('hour');
    assert.ok(Math.abs(r.to - Date.now()) < 5000, 'without now: ends at the current time');
    assert.equal(r.to - r.from, 3600e3);
    assert.throws(() => Fmt.range('year', now), /unknown range: year/);
    assert.throws(() => Fmt.range('constructor', now), /unknown range/);
    assert.throws(() => Fmt.range('toString', now), /unknown range/);
});

test('period: day', () => {
    assert.deepEqual(Fmt.period('day', Date.UTC(2026, 11, 31, 23, 59, 59)),
        {from: '2026-12-31', to: '2026-12-31'});
    /* UTC, not local: 02:00 UTC on the 1st is the 31st in New York. */
    assert.deepEqual(Fmt.period('day', Date.UTC(2027, 0, 1, 2)),
        {from: '2027-01-01', to: '2027-01-01'});
});

test('period: ISO weeks start on Monday and cross years', () => {
    /* 2026-01-01 is a Thursday: its week is Mon 2025-12-29 to Sun 2026-01-04. */
    assert.deepEqual(Fmt.period('week', Date.UTC(2026, 0, 1)), {from: '2025-12-29', to: '2026-01-04'});
    /* The Sunday, late, is still that week; the Monday starts the next. */
    assert.deepEqual(Fmt.period('week', Date.UTC(2026, 0, 4, 23, 59, 59)), {from: '2025-12-29', to: '2026-01-04'});
    assert.deepEqual(Fmt.period('week', Date.UTC(2026, 0, 5)), {from: '2026-01-05', to: '2026-01-11'});
    /* 2020 had 53 ISO weeks: its last runs into 2021. */
    assert.deepEqual(Fmt.period('week', Date.UTC(2020, 11, 31)), {from: '2020-12-28', to: '2021-01-03'});
    /* A week across a month end. */
    assert.deepEqual(Fmt.period('week', Date.UTC(2026, 1, 27)), {from: '2026-02-23', to: '2026-03-01'});
});

test('period: month ends, leap years', () => {
    assert.deepEqual(Fmt.period('month', Date.UTC(2024, 1, 10)), {from: '2024-02-01', to: '2024-02-29'});
    assert.deepEqual(Fmt.period('month', Date.UTC(2025, 1, 28, 23, 59)), {from: '2025-02-01', to: '2025-02-28'});
    assert.deepEqual(Fmt.period('month', Date.UTC(2100, 1, 1)), {from: '2100-02-01', to: '2100-02-28'});
    assert.deepEqual(Fmt.period('month', Date.UTC(2000, 1, 1)), {from: '2000-02-01', to: '2000-02-29'});
    assert.deepEqual(Fmt.period('month', Date.UTC(2026, 11, 31)), {from: '2026-12-01', to: '2026-12-31'});
    assert.deepEqual(Fmt.period('month', Date.UTC(2026, 3, 30, 23, 59, 59)), {from: '2026-04-01', to: '2026-04-30'});
    assert.throws(() => Fmt.period('year', 0), /unknown period: year/);
});

test('resources: GPUs, fractions, models, CPUs, tasks', () => {
    assert.equal(Fmt.resources({gpus: 2, gpuModels: ['H100', 'A100']}), '2\u00d7H100|A100');
    assert.equal(Fmt.resources({gpus: 1, gpuModels: []}), '1 GPU');
    assert.equal(Fmt.resources({gpuMilli: 500}), '0.5 GPU');
    assert.equal(Fmt.resources({gpuMilli: 250, gpuModels: ['T4'], cpuMilli: 0}), '0.25\u00d7T4');
    assert.equal(Fmt.resources({cpuMilli: 4000}), '4 CPU');
    assert.equal(Fmt.resources({cpuMilli: 1500, cpus: 8}), '1.5 CPU', 'cpuMilli wins over cpus');
    assert.equal(Fmt.resources({cpus: 2}), '2 CPU');
    assert.equal(Fmt.resources({gpus: 1, cpuMilli: 1500}, 4), '4 tasks \u00d7 1 GPU, 1.5 CPU');
    assert.equal(Fmt.resources({gpus: 1}, 1), '1 GPU');
    assert.equal(Fmt.resources({}), 'CPU only');
    assert.equal(Fmt.resources(null), DASH);
});

test('ms: RFC 3339 of the API, numbers as they are, unknown as null', () => {
    assert.equal(Fmt.ms('2026-12-02T11:00:00.000Z'), Date.UTC(2026, 11, 2, 11));
    assert.equal(Fmt.ms('2026-12-02T12:00:00+01:00'), Date.UTC(2026, 11, 2, 11));
    assert.equal(Fmt.ms(5), 5);
    assert.equal(Fmt.ms(0), 0);
    assert.equal(Fmt.ms(''), null);
    assert.equal(Fmt.ms(null), null);
    assert.equal(Fmt.ms(undefined), null);
    assert.equal(Fmt.ms('garbage'), null);
});
