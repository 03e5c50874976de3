/* Unit tests of CostReport (web/js/46-cost.js): the page's state, the
 * report's parameters and command line, totals, series per period and
 * the budgets' burn-up. */
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const R = require('../js/46-cost.js');

/* The page's state of a query given as an object. */
const parse = (o) => R.parse(new URLSearchParams(o));

const DAY = 86400e3;

function row(key, period, over) {
    return Object.assign({key: key, period: period, jobs: 1, gpu_hours: 1, cu: 2, core_hours: 0.5,
        gib_hours: 1, energy_kwh: 0.1, energy_measured: false, energy_measured_kwh: 0, cost: 3,
        co2_kg: 0.05, unused_gpu_hours: 0, idle_jobs: 0, currency: 'USD'}, over || {});
}

test('parse: defaults and unknown values', () => {
    const st = parse(new URLSearchParams(''));
    assert.deepStrictEqual(st, {by: 'team', period: 'day', from: '', to: '', team: '', share_idle: false,
        metric: 'gpu_hours', sort: ''});
    const x = parse({by: 'gpu-model', period: 'week', from: ' 2026-11-01 ', to: '2026-12-01', team: 'nlp',
        share_idle: 'true', metric: 'cost', sort: '-cost'});
    assert.strictEqual(x.by, 'gpu-model');
    assert.strictEqual(x.period, 'week');
    assert.strictEqual(x.from, '2026-11-01');
    assert.strictEqual(x.share_idle, true);
    assert.strictEqual(x.metric, 'cost');
    assert.strictEqual(x.sort, '-cost');
    const bad = parse({by: 'job', period: 'year', metric: 'bogus', sort: 'a;b', share_idle: 'yes'});
    assert.strictEqual(bad.by, 'team');
    assert.strictEqual(bad.period, 'day');
    assert.strictEqual(bad.metric, 'gpu_hours');
    assert.strictEqual(bad.sort, '');
    assert.strictEqual(bad.share_idle, false);
});

test('toQuery keeps what differs from the defaults, and parse reads it back', () => {
    assert.deepStrictEqual(R.toQuery(parse({})), {});
    const st = parse({by: 'user', period: 'none', from: '2026-12-01', share_idle: 'true', metric: 'co2_kg'});
    const q = R.toQuery(st);
    assert.deepStrictEqual(q, {by: 'user', period: 'none', from: '2026-12-01', share_idle: 'true', metric: 'co2_kg'});
    assert.deepStrictEqual(parse(q), st);
});

test('apiParams: period none is no period; format only for the download', () => {
    const st = parse({by: 'project', period: 'none', from: '2026-11-01', to: '2026-12-01', team: 'vision', share_idle: 'true'});
    assert.deepStrictEqual(R.apiParams(st), {by: 'project', from: '2026-11-01', to: '2026-12-01', team: 'vision', share_idle: 'true'});
    assert.deepStrictEqual(R.apiParams(parse({}), 'csv'), {by: 'team', period: 'day', format: 'csv'});
});

test('command: the sluice report line of the same parameters', () => {
    assert.strictEqual(R.command(parse({})), 'sluice report --by team --period day -o csv');
    assert.strictEqual(R.command(parse({by: 'gpu-model', period: 'none', from: '2026-11-01', to: '2026-12-01T10:00:00Z',
        team: 'nlp', share_idle: 'true'})),
    'sluice report --by gpu-model --from 2026-11-01 --to 2026-12-01T10:00:00Z --team nlp --chargeback -o csv');
    assert.strictEqual(R.utilCommand(parse({from: '2026-11-01'})), 'sluice report --utilisation --from 2026-11-01 -o csv');
    assert.strictEqual(R.shellWord("it's"), "'it'\\''s'");
    assert.strictEqual(R.shellWord('a b'), "'a b'");
    assert.strictEqual(R.shellWord('$(x)'), "'$(x)'");
});

test('totals: sums, no job total across periods, measured when all rows are', () => {
    const rows = [row('a', 'p1', {energy_measured: true}), row('b', 'p1', {jobs: 2, cost: 4.5})];
    const t = R.totals(rows, false);
    assert.strictEqual(t.jobs, 3);
    assert.strictEqual(t.cost, 7.5);
    assert.strictEqual(t.gpu_hours, 2);
    assert.strictEqual(t.energy_measured, null);
    assert.strictEqual(t.currency, 'USD');
    assert.strictEqual(t.chargeback, null, 'absent without chargeback');
    assert.strictEqual(R.totals(rows, true).jobs, null);
    assert.strictEqual(R.totals([row('a', 'p', {energy_measured: true})], false).energy_measured, true);
    assert.strictEqual(R.totals([row('a', 'p')], false).energy_measured, false);
    assert.strictEqual(R.totals([], false).energy_measured, null);
});

test('periodSeries: one series per key, zeros where a key used nothing, the rest as other', () => {
    const d1 = '2026-12-01T00:00:00.000Z', d2 = '2026-12-02T00:00:00.000Z';
    const rows = [row('a', d1, {gpu_hours: 5}), row('b', d1, {gpu_hours: 1}), row('a', d2, {gpu_hours: 2}),
        row('c', d2, {gpu_hours: 3})];
    const s = R.periodSeries(rows, 'gpu_hours', 6);
    assert.deepStrictEqual(s.t, [Date.parse(d1), Date.parse(d2)]);
    assert.deepStrictEqual(s.series.map((x) => x.label), ['a', 'c', 'b']);
    assert.deepStrictEqual(s.series[0].values, [5, 2]);
    assert.deepStrictEqual(s.series[1].values, [0, 3]);
    assert.deepStrictEqual(s.series[2].values, [1, 0]);
    const two = R.periodSeries(rows, 'gpu_hours', 2);
    assert.deepStrictEqual(two.series.map((x) => x.label), ['a', 'other (2)']);
    assert.deepStrictEqual(two.series[1].values, [1, 3]);
    /* rows out of order: periods still ascending */
    const rev = R.periodSeries(rows.slice().reverse(), 'gpu_hours', 6);
    assert.deepStrictEqual(rev.t, s.t);
    assert.strictEqual(R.periodSeries([row('', d1)], 'cost', 6).series[0].label, '(none)');
});

test('periodLabel and sortRows', () => {
    assert.strictEqual(R.periodLabel('2026-12-01T00:00:00.000Z', 'day'), '2026-12-01');
    assert.strictEqual(R.periodLabel('2026-11-30T00:00:00.000Z', 'week'), 'week of 2026-11-30');
    assert.strictEqual(R.periodLabel('2026-12-01T00:00:00.000Z', 'month'), '2026-12');
    const rows = [row('b', 'p', {cost: 1}), row('a', 'p', {cost: 10}), row('c', 'p', {cost: 2})];
    assert.deepStrictEqual(R.sortRows(rows, 'cost').map((r) => r.key), ['b', 'c', 'a']);
    assert.deepStrictEqual(R.sortRows(rows, '-cost').map((r) => r.key), ['a', 'c', 'b']);
    assert.deepStrictEqual(R.sortRows(rows, 'key').map((r) => r.key), ['a', 'b', 'c']);
    assert.deepStrictEqual(R.sortRows(rows, '').map((r) => r.key), ['b', 'a', 'c']);
});

test('budgetUnit and actionWords follow docs/metering.md', () => {
    assert.strictEqual(R.budgetUnit('gpuHours').field, 'gpu_hours');
    assert.strictEqual(R.budgetUnit('cu').field, 'cu');
    assert.strictEqual(R.budgetUnit('cost', 'EUR').field, 'cost');
    assert.match(R.budgetUnit('cost', 'EUR').fmt(12.5), /12\.50\u00a0EUR/);
    assert.match(R.actionWords('block', 'vision').at100, /refused \(403 budget_exceeded\)/);
    assert.match(R.actionWords('demote', 'vision').at100, /best-effort/);
    assert.match(R.actionWords('demote', 'vision').at100, /running jobs are not touched/);
    assert.match(R.actionShort('demote'), /demote new jobs to best-effort/);
    assert.deepStrictEqual(R.budgetState({percent: 50}), {text: 'within', kind: 'ok'});
    assert.strictEqual(R.budgetState({percent: 80}).kind, 'warn');
    assert.strictEqual(R.budgetState({percent: 99, exceeded: true}).kind, 'bad');
});

test('burnSeries: cumulative by day up to now, the rest of the period empty, limit and 80 %', () => {
    const start = Date.UTC(2026, 11, 1), end = Date.UTC(2027, 0, 1);
    const b = {name: 'v', team: 'vision', unit: 'gpuHours', limit: 100, period_start: new Date(start).toISOString(),
        period_end: new Date(end).toISOString()};
    const iso = (t) => new Date(t).toISOString();
    const rows = [
        row('vision', iso(start), {gpu_hours: 10}),
        row('nlp', iso(start), {gpu_hours: 99}),           /* another team */
        row('vision', iso(start + 2 * DAY), {gpu_hours: 5}),
        row('vision', iso(start + 3 * DAY), {gpu_hours: 1}),
        row('vision', iso(start - DAY), {gpu_hours: 50})   /* before the period */
    ];
    const now = start + 3 * DAY + 12 * 3600e3; /* noon of the 4th */
    const s = R.burnSeries(b, rows, now, 'USD');
    assert.strictEqual(s.t.length, 1 + 31);
    assert.strictEqual(s.t[0], start);
    assert.deepStrictEqual(s.used.slice(0, 5), [0, 10, 10, 15, 16]);
    assert.strictEqual(s.t[4], now, 'today ends at now');
    assert.strictEqual(s.t[5], start + 5 * DAY);
    assert.ok(s.used.slice(5).every((v) => v === null));
    assert.strictEqual(s.t[s.t.length - 1], end);
    assert.ok(s.limit.every((v) => v === 100));
    assert.ok(s.warn.every((v) => v === 80));
    assert.strictEqual(s.total, 16);
    assert.ok(Math.abs(s.projected - 16 / 3.5 * 31) < 1e-9);
    /* cost budgets read the cost; a day budget has two points */
    const day = {team: 'vision', unit: 'cost', limit: 5, period_start: iso(start + 3 * DAY), period_end: iso(start + 4 * DAY)};
    const sd = R.burnSeries(day, rows, now, 'USD');
    assert.deepStrictEqual(sd.t, [start + 3 * DAY, now]);
    assert.deepStrictEqual(sd.used, [0, 3]);
    /* a period over: no projection, every day counted */
    const past = R.burnSeries(b, rows, end + DAY, 'USD');
    assert.strictEqual(past.projected, null);
    assert.strictEqual(past.used[past.used.length - 1], 16);
});

test('earliestStart, budgetsOf and quickRanges', () => {
    assert.strictEqual(R.earliestStart([{period_start: '2026-12-06T00:00:00.000Z'},
        {period_start: '2026-11-30T00:00:00.000Z'}, {period_start: '2026-12-01T00:00:00.000Z'}]), '2026-11-30T00:00:00.000Z');
    assert.strictEqual(R.earliestStart([]), '');
    const bs = [{name: 'a', team: 'vision'}, {name: 'b', team: 'nlp'}];
    assert.deepStrictEqual(R.budgetsOf(bs, 'nlp').map((b) => b.name), ['b']);
    assert.deepStrictEqual(R.budgetsOf(bs, '').map((b) => b.name), ['a', 'b']);
    assert.deepStrictEqual(R.budgetsOf(undefined, ''), []);
    const q = R.quickRanges(Date.UTC(2026, 0, 15, 10));
    const by = {};
    q.forEach((x) => {
        by[x.id] = x;
    });
    assert.deepStrictEqual([by.month.from, by.month.to], ['2026-01-01', '']);
    assert.deepStrictEqual([by['last-month'].from, by['last-month'].to], ['2025-12-01', '2026-01-01']);
    assert.strictEqual(by['7d'].from, '2026-01-09');
    assert.strictEqual(by['30d'].from, '2025-12-17');
    assert.strictEqual(by.year.from, '2026-01-01');
});

test('figure keeps a small figure from reading 0', () => {
    assert.strictEqual(R.figure(1234.5678, 2), '1,234.57');
    assert.strictEqual(R.figure(0, 2), '0');
    assert.strictEqual(R.figure(0.000834, 2), '0.00083');
    assert.strictEqual(R.figure(-0.000334, 3), '-0.00033');
    assert.strictEqual(R.figure(-0.000834, 3), '-0.001');
    assert.strictEqual(R.figure(0.004, 2), '0.004');
    assert.strictEqual(R.figure(0.006, 2), '0.01', 'rounds to a figure that is not 0');
    assert.strictEqual(R.figure(null, 2), '\u2014');
    assert.strictEqual(R.kwh(0.0000123), '0.000012\u00a0kWh');
    assert.strictEqual(R.kwh(null), '\u2014');
});
