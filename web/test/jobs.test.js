/*
 * jobs.test.js - the jobs list's pure parts (web/js/43-jobs.js): the URL's
 * query <-> the filter state <-> GET /v1/jobs's parameters, the rows'
 * change signature, the short times and the waiting/running words.
 */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
global.Fmt = require('../js/00-format.js');
const J = require('../js/43-jobs.js');

test('parse: an empty query is every job, newest first, page one', () => {
    const st = J.parse(new URLSearchParams(''));
    assert.deepStrictEqual(st, {state: '', team: '', queue: '', user: '', priority_class: '', gpu_model: '',
        q: '', array: '', sort: '-id', offset: 0});
});

test('parse: every filter, the sort and the offset come from the URL', () => {
    const st = J.parse(new URLSearchParams('state=Pending%2CRunning&team=vision&queue=q1&user=alice' +
        '&priority_class=batch&gpu_model=H100&q=%20llama%20&array=20&sort=name&offset=100'));
    assert.deepStrictEqual(st, {state: 'Pending,Running', team: 'vision', queue: 'q1', user: 'alice',
        priority_class: 'batch', gpu_model: 'H100', q: 'llama', array: '20', sort: 'name', offset: 100});
});

test('parse: an unknown sort or a bad offset falls back to the defaults', () => {
    assert.strictEqual(J.parse({sort: 'colour'}).sort, '-id');
    assert.strictEqual(J.parse({sort: '--id'}).sort, '-id');
    assert.strictEqual(J.parse({sort: '-finished'}).sort, '-finished');
    assert.strictEqual(J.parse({offset: '-5'}).offset, 0);
    assert.strictEqual(J.parse({offset: '1e3'}).offset, 0);
    assert.strictEqual(J.parse({offset: '50'}).offset, 50);
});

test('toQuery: only what differs from the defaults; parse reads it back', () => {
    assert.deepStrictEqual(J.toQuery(J.parse({})), {});
    const st = J.parse({team: 'nlp', q: 'bert', sort: 'submitted', offset: '50'});
    const q = J.toQuery(st);
    assert.deepStrictEqual(q, {team: 'nlp', q: 'bert', sort: 'submitted', offset: '50'});
    assert.deepStrictEqual(J.parse(new URLSearchParams(q)), st);
});

test('apiParams: one page of 50 with its total, every state when none is chosen', () => {
    assert.deepStrictEqual(J.apiParams(J.parse({})), {state: 'all', sort: '-id', limit: 50, count: 'true'});
    assert.deepStrictEqual(J.apiParams(J.parse({state: 'Failed', team: 't3', gpu_model: 'A100', offset: '100'})),
        {state: 'Failed', team: 't3', gpu_model: 'A100', sort: '-id', offset: 100, limit: 50, count: 'true'});
});

test('same: compares what the URL would show', () => {
    assert.ok(J.same(J.parse({}), J.parse({sort: '-id', offset: '0'})));
    assert.ok(!J.same(J.parse({q: 'a'}), J.parse({q: 'b'})));
    assert.ok(!J.same(J.parse({}), J.parse({offset: '50'})));
});

const job = {id: 7, name: 'train', state: 'Pending', held: false, idle: null, team: 'vision', user: 'alice',
    queue: 'vision', priority_class: 'batch', submitted_at: '2026-12-01T10:00:00.000Z', started_at: null,
    finished_at: null, reason: 'quota', message: null, exit_code: null,
    spec: {apiVersion: 'sluice/v1', kind: 'Job', spec: {tasks: 2, resources: {gpus: 1, cpuMilli: 1000}}}};

test('rowSig: changes with what a row shows, not with what it does not', () => {
    const a = J.rowSig(job);
    assert.strictEqual(J.rowSig(Object.assign({}, job, {attempt: 3, placement: []})), a);
    assert.notStrictEqual(J.rowSig(Object.assign({}, job, {state: 'Running'})), a);
    assert.notStrictEqual(J.rowSig(Object.assign({}, job, {held: true})), a);
    assert.notStrictEqual(J.rowSig(Object.assign({}, job, {reason: 'user limit'})), a);
    assert.notStrictEqual(J.rowSig(Object.assign({}, job, {idle: {since: 'x'}})), a);
});

test('spec: the job document\'s spec part', () => {
    assert.deepStrictEqual(J.spec(job), {tasks: 2, resources: {gpus: 1, cpuMilli: 1000}});
    assert.deepStrictEqual(J.spec({}), {});
});

test('shortTime: the time today, the day this year, the date before', () => {
    const now = new Date(2026, 11, 6, 15, 0, 0).getTime();
    assert.strictEqual(J.shortTime(new Date(2026, 11, 6, 9, 5, 7).getTime(), now), '09:05:07');
    assert.strictEqual(J.shortTime(new Date(2026, 0, 2, 9, 5, 7).getTime(), now), '01-02 09:05');
    assert.strictEqual(J.shortTime(new Date(2025, 0, 2, 9, 5, 7).getTime(), now), '2025-01-02');
    assert.strictEqual(J.shortTime(null, now), '\u2014');
});

test('timing: waiting, running and ran', () => {
    const sub = Date.parse('2026-12-01T10:00:00Z');
    let t = J.timing(job, sub + 300e3);
    assert.strictEqual(t.started.text, 'waiting 5m');
    assert.strictEqual(t.started.live, sub);
    assert.strictEqual(t.finished.text, '\u2014');
    const run = Object.assign({}, job, {state: 'Running', started_at: '2026-12-01T10:01:00Z'});
    t = J.timing(run, sub + 181e3);
    assert.strictEqual(t.finished.text, 'running 2m 1s');
    assert.match(t.started.title, /waited 1m/);
    const done = Object.assign({}, run, {state: 'Succeeded', finished_at: '2026-12-01T11:01:00Z'});
    t = J.timing(done, sub + 86400e3);
    assert.match(t.finished.title, /ran 1h/);
    assert.strictEqual(t.finished.live, undefined);
    const never = Object.assign({}, job, {state: 'Cancelled', finished_at: '2026-12-01T10:02:00Z'});
    assert.strictEqual(J.timing(never, sub).started.text, '\u2014');
});

test('gpuModels: each model of the nodes once, sorted', () => {
    assert.deepStrictEqual(J.gpuModels({nodes: [{gpus: [{model: 'H100'}, {model: 'A100'}]}, {gpus: [{model: 'H100'}]},
        {gpus: []}, {}]}), ['A100', 'H100']);
    assert.deepStrictEqual(J.gpuModels(null), []);
});

test('stateOptions: any, pending or running, and every state', () => {
    const o = J.stateOptions();
    assert.deepStrictEqual(o[0], ['', 'Any state']);
    assert.deepStrictEqual(o[1], ['Pending,Running', 'Pending or running']);
    assert.strictEqual(o.length, 2 + J.STATES.length);
});
