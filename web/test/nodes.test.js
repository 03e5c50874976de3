/* Tests of 41-nodes.js's pure parts: the filters of a URL, which nodes
 * and GPUs match them, a GPU's measurement and state in words, a row's
 * change signature. */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
global.Fmt = require('../js/00-format.js');
global.Cluster = require('../js/40-overview.js').Cluster;
const NodesView = require('../js/41-nodes.js');

function node(name, gpus, extra) {
    return Object.assign({name: name, state: 'up', admin: {state: 'active'}, gpu_source: 'fake', gpus: gpus}, extra || {});
}
function gpu(index, model, milli, jobs) {
    return {index: index, model: model, mem_bytes: 0, milli_allocated: milli, jobs: jobs || []};
}
function states(n, jobs) {
    return n.gpus.map((g) => Cluster.gpuState(n.name, g, Cluster.jobIndex(jobs || [])));
}

test('filters of a URL: unknown states are dropped, text trimmed', () => {
    assert.deepStrictEqual(NodesView.filtersOf(new URLSearchParams('model=H100&state=idle&node=cordoned&q=%20gpu-1%20')),
        {model: 'H100', state: 'idle', node: 'cordoned', q: 'gpu-1'});
    assert.deepStrictEqual(NodesView.filtersOf(new URLSearchParams('state=busy&node=sleeping')),
        {model: '', state: '', node: '', q: ''});
});

test('a node matches the name text in any case', () => {
    const n = node('GPU-0042', []);
    const f = NodesView.filtersOf(new URLSearchParams('q=gpu-004'));
    assert.strictEqual(NodesView.nodeMatches(n, [], f), true);
    assert.strictEqual(NodesView.nodeMatches(n, [], NodesView.filtersOf(new URLSearchParams('q=gpu-01'))), false);
});

test('a GPU filter keeps the nodes with one matching GPU', () => {
    const a = node('a', [gpu(0, 'H100', 1000, [1]), gpu(1, 'H100', 0)]);
    const b = node('b', [gpu(0, 'A100', 1000, [2])]);
    const jobs = [{id: 1, placement: [{node: 'a', gpus: [0], gpu_milli: 1000}], idle: null},
        {id: 2, placement: [{node: 'b', gpus: [0], gpu_milli: 1000}], idle: {since: 'x'}}];
    const free = NodesView.filtersOf(new URLSearchParams('state=free'));
    assert.strictEqual(NodesView.nodeMatches(a, states(a, jobs), free), true);
    assert.strictEqual(NodesView.nodeMatches(b, states(b, jobs), free), false);
    const idle = NodesView.filtersOf(new URLSearchParams('state=idle'));
    assert.strictEqual(NodesView.nodeMatches(a, states(a, jobs), idle), false);
    assert.strictEqual(NodesView.nodeMatches(b, states(b, jobs), idle), true);
    const freeA100 = NodesView.filtersOf(new URLSearchParams('state=free&model=A100'));
    assert.strictEqual(NodesView.nodeMatches(a, states(a, jobs), freeA100), false, 'model and state of the same GPU');
    assert.strictEqual(NodesView.gpuMatches(a.gpus[1], states(a, jobs)[1], free), true);
    assert.strictEqual(NodesView.gpuMatches(a.gpus[0], states(a, jobs)[0], free), false);
});

test('the node state filter', () => {
    const c = node('c', [], {admin: {state: 'cordoned'}});
    assert.strictEqual(NodesView.nodeMatches(c, [], NodesView.filtersOf(new URLSearchParams('node=cordoned'))), true);
    assert.strictEqual(NodesView.nodeMatches(c, [], NodesView.filtersOf(new URLSearchParams('node=up'))), false);
});

test('measurement: fake GPUs are not measured, NVML ones show what they have', () => {
    const m = NodesView.measurement(node('a', []), gpu(0, 'H100', 0));
    assert.strictEqual(m.measured, false);
    assert.strictEqual(m.text, 'not measured');
    assert.match(m.title, /fake GPU.*estimated/);
    const g = Object.assign(gpu(0, 'H100', 0), {mem_bytes: 85899345920, utilisation: 0.43,
        mem_used_bytes: 12884901888, power_w: 251.4, temperature_c: 61});
    const n = NodesView.measurement(node('a', [], {gpu_source: 'nvml'}), g);
    assert.strictEqual(n.measured, true);
    assert.strictEqual(n.text, '43\u00a0% \u00b7 12\u00a0GiB/80\u00a0GiB \u00b7 251\u00a0W \u00b7 61\u00a0\u00b0C');
    const partial = NodesView.measurement(node('a', [], {gpu_source: 'nvml'}), Object.assign(gpu(0, 'H100', 0), {power_w: 80}));
    assert.strictEqual(partial.text, 'util \u2014 \u00b7 80\u00a0W');
});

test('state in words, with the parts of a shared GPU', () => {
    assert.strictEqual(NodesView.stateWords({state: 'free', busy: 0, idle: 0, free: 1000}), 'free');
    assert.strictEqual(NodesView.stateWords({state: 'allocated', busy: 1000, idle: 0, free: 0}), 'allocated');
    assert.strictEqual(NodesView.stateWords({state: 'idle', busy: 0, idle: 1000, free: 0}), 'idle');
    assert.strictEqual(NodesView.stateWords({state: 'allocated', busy: 500, idle: 250, free: 250}),
        '0.5 allocated, 0.25 idle, 0.25 free');
});

test('a row\'s signature changes with its node and with its holders\' team and idle flag', () => {
    const n = node('a', [gpu(0, 'H100', 1000, [1])]);
    const j = {id: 1, team: 'vision', name: 'x', placement: [{node: 'a', gpus: [0], gpu_milli: 1000}], idle: null};
    const s1 = NodesView.signature(n, states(n, [j]));
    assert.strictEqual(NodesView.signature(n, states(n, [j])), s1);
    assert.notStrictEqual(NodesView.signature(n, states(n, [Object.assign({}, j, {idle: {since: 'x'}})])), s1);
    assert.notStrictEqual(NodesView.signature(n, states(n, [])), s1, 'a holder no longer visible');
    const m = node('a', [gpu(0, 'H100', 1000, [1])], {admin: {state: 'cordoned'}});
    assert.notStrictEqual(NodesView.signature(m, states(m, [j])), s1);
});
