/* Tests of 40-overview.js's pure parts: a GPU's state from the nodes and
 * jobs answers, the breakdown by model and node, the top nodes, the range
 * of a URL, a series' figures and the charts of a history answer. */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
global.Fmt = require('../js/00-format.js');
const {Cluster, Overview} = require('../js/40-overview.js');

function gpu(index, milli, jobs, extra) {
    return Object.assign({index: index, model: 'H100', mem_bytes: 0, milli_allocated: milli, jobs: jobs || []}, extra || {});
}
function job(id, node, gpus, milli, idle, team) {
    return {id: id, team: team || 'vision', name: 'j' + id, user: 'u',
        placement: [{node: node, task: 0, gpus: gpus, gpu_milli: milli}],
        idle: idle ? {since: '2026-12-06T07:00:00.000Z', idle_ms: 60000, interactive: false, ends_at: null} : null};
}

test('a free GPU', () => {
    const st = Cluster.gpuState('n1', gpu(0, 0), {});
    assert.deepStrictEqual([st.state, st.alloc, st.idle, st.busy, st.free, st.holders.length],
        ['free', 0, 0, 0, 1000, 0]);
});

test('a GPU held by a busy job is allocated, by an idle one idle', () => {
    const jobs = Cluster.jobIndex([job(1, 'n1', [0], 1000, false), job(2, 'n1', [1], 1000, true)]);
    const a = Cluster.gpuState('n1', gpu(0, 1000, [1]), jobs);
    assert.strictEqual(a.state, 'allocated');
    assert.strictEqual(a.busy, 1000);
    assert.strictEqual(a.holders[0].job.id, 1);
    const b = Cluster.gpuState('n1', gpu(1, 1000, [2]), jobs);
    assert.strictEqual(b.state, 'idle');
    assert.deepStrictEqual([b.idle, b.busy, b.free], [1000, 0, 0]);
    assert.strictEqual(b.holders[0].idle, true);
});

test('a shared GPU splits by each job\'s gpu_milli from its placement', () => {
    const jobs = Cluster.jobIndex([job(1, 'n1', [3], 250, true), job(2, 'n1', [3], 500, false)]);
    const st = Cluster.gpuState('n1', gpu(3, 750, [1, 2]), jobs);
    assert.deepStrictEqual([st.state, st.alloc, st.idle, st.busy, st.free], ['allocated', 750, 250, 500, 250]);
});

test('the placement on another node or GPU does not count', () => {
    const j = job(1, 'n2', [3], 250, true);
    assert.strictEqual(Cluster.jobMilliOn(j, 'n1', 3), null);
    assert.strictEqual(Cluster.jobMilliOn(j, 'n2', 2), null);
    assert.strictEqual(Cluster.jobMilliOn(j, 'n2', 3), 250);
    /* two tasks on the same GPU add up */
    j.placement.push({node: 'n2', task: 1, gpus: [3], gpu_milli: 250});
    assert.strictEqual(Cluster.jobMilliOn(j, 'n2', 3), 500);
});

test('a holder the caller may not see counts busy, its share an equal split', () => {
    const jobs = Cluster.jobIndex([job(1, 'n1', [0], 500, true)]);
    const st = Cluster.gpuState('n1', gpu(0, 1000, [1, 99]), jobs);
    assert.deepStrictEqual([st.idle, st.busy], [500, 500]);
    assert.strictEqual(st.holders[1].job, null);
    assert.strictEqual(st.holders[1].milli, 500);
});

test('an idle job\'s share is never more than the GPU has allocated', () => {
    const jobs = Cluster.jobIndex([job(1, 'n1', [0], 1000, true)]);
    const st = Cluster.gpuState('n1', gpu(0, 600, [1]), jobs);
    assert.deepStrictEqual([st.state, st.idle, st.busy, st.free], ['idle', 600, 0, 400]);
});

test('node status: the admin state first, down above all', () => {
    assert.strictEqual(Cluster.nodeStatus({state: 'up', admin: {state: 'active'}}), 'up');
    assert.strictEqual(Cluster.nodeStatus({state: 'up', admin: {state: 'cordoned'}}), 'cordoned');
    assert.strictEqual(Cluster.nodeStatus({state: 'draining'}), 'draining');
    assert.strictEqual(Cluster.nodeStatus({state: 'down', admin: {state: 'drained'}}), 'down');
});

test('breakdown by model and node, with measured figures', () => {
    const nodes = [
        {name: 'a', state: 'up', admin: {state: 'active'}, cpu_milli: 8000, cpu_milli_allocated: 2000,
            mem_bytes: 100, mem_bytes_allocated: 10, gpus: [
                gpu(0, 1000, [1], {utilisation: 0.5, power_w: 200}),
                gpu(1, 1000, [2], {utilisation: 0.01, power_w: 70}),
                Object.assign(gpu(2, 0), {model: 'A100'})]},
        {name: 'b', state: 'up', admin: {state: 'cordoned'}, gpus: [Object.assign(gpu(0, 500, [3]), {model: 'A100'})]},
        {name: 'c', state: 'down', gpus: []}
    ];
    const jobs = Cluster.jobIndex([job(1, 'a', [0], 1000), job(2, 'a', [1], 1000, true), job(3, 'b', [0], 500)]);
    const b = Cluster.breakdown(nodes, jobs);
    assert.deepStrictEqual([b.total.gpus, b.total.busy, b.total.idle, b.total.free], [4, 1500, 1000, 1500]);
    assert.strictEqual(b.total.utilN, 2);
    assert.ok(Math.abs(b.total.utilSum - 0.51) < 1e-9);
    assert.strictEqual(b.total.powerW, 270);
    assert.deepStrictEqual(b.models.map((m) => [m.model, m.gpus, m.busy, m.idle, m.free]),
        [['A100', 2, 500, 0, 1500], ['H100', 2, 1000, 1000, 0]]);
    assert.deepStrictEqual(b.nodes.map((n) => [n.name, n.status, n.gpus, n.models.join('+')]),
        [['a', 'up', 3, 'H100+A100'], ['b', 'cordoned', 1, 'A100'], ['c', 'down', 0, '']]);
    assert.deepStrictEqual([b.nodes[0].cpu, b.nodes[0].cpuAlloc], [8000, 2000]);
    assert.deepStrictEqual(Object.assign({}, b.statuses), {up: 1, cordoned: 1, down: 1});
});

test('breakdown of 1,000 nodes x 8 GPUs adds up', () => {
    const nodes = [], jobs = [];
    for (let n = 0; n < 1000; n++) {
        const gs = [];
        for (let g = 0; g < 8; g++) {
            const id = n * 8 + g + 1;
            const used = (n + g) % 3 !== 0;
            gs.push(gpu(g, used ? 1000 : 0, used ? [id] : []));
            if (used)
                jobs.push(job(id, 'n' + n, [g], 1000, g === 1));
        }
        nodes.push({name: 'n' + n, state: 'up', gpus: gs});
    }
    const b = Cluster.breakdown(nodes, Cluster.jobIndex(jobs));
    assert.strictEqual(b.total.gpus, 8000);
    assert.strictEqual(b.total.busy + b.total.idle + b.total.free, 8000 * 1000);
    /* GPU 1 of every node is idle when used: (n + 1) % 3 !== 0 */
    assert.strictEqual(b.total.idle, 667 * 1000);
    assert.strictEqual(b.nodes.length, 1000);
});

test('top nodes: most idle, then most allocated, then by name', () => {
    const rows = [
        {name: 'c', idle: 0, busy: 2000}, {name: 'a', idle: 0, busy: 2000},
        {name: 'b', idle: 1000, busy: 0}, {name: 'd', idle: 0, busy: 0}];
    assert.deepStrictEqual(Cluster.topNodes(rows, 3).map((r) => r.name), ['b', 'a', 'c']);
    assert.strictEqual(rows[0].name, 'c', 'the input is not reordered');
});

test('range of a URL: one of four, day by default', () => {
    assert.strictEqual(Overview.rangeOf(new URLSearchParams('range=week')), 'week');
    assert.strictEqual(Overview.rangeOf(new URLSearchParams('range=year')), 'day');
    assert.strictEqual(Overview.rangeOf(new URLSearchParams('')), 'day');
});

test('stats skip nulls', () => {
    assert.deepStrictEqual(Overview.stats([null, 2, 4, null, 3, NaN]),
        {n: 3, sum: 9, mean: 3, max: 4, min: 2, last: 3});
    assert.deepStrictEqual(Overview.stats([null]), {n: 0, sum: null, mean: null, max: null, min: null, last: null});
});

test('wait unit follows the largest wait', () => {
    assert.strictEqual(Overview.waitUnit(null).name, 's');
    assert.strictEqual(Overview.waitUnit(90).name, 's');
    assert.strictEqual(Overview.waitUnit(600).name, 'min');
    assert.strictEqual(Overview.waitUnit(86400).name, 'h');
});

test('history charts: series, scaled waits and their summaries', () => {
    const hist = {from: 0, to: 3 * 60000, step: 60000, team: null, capacity_gpus: 8, series: {
        t: [0, 60000, 120000], gpus_allocated: [2, 4, 6], gpus_idle: [0, 1, 0.5],
        utilisation: [null, 0.5, 0.7], pending: [3, 1, 0], started: [0, 2, 1],
        wait_p50_s: [null, 300, 600], wait_p90_s: [null, 600, 900], wait_p99_s: [null, 900, 1200],
        preemptions: [0, 0, 2]}};
    const cs = Overview.historyCharts(hist);
    assert.deepStrictEqual(cs.map((c) => c.key), ['allocation', 'utilisation', 'pending', 'waits', 'preemptions']);
    assert.deepStrictEqual(cs[0].data.series[0].values, [8, 8, 8], 'capacity as a line');
    assert.match(cs[0].summary, /mean 4, peak 6 of 8 GPUs/);
    assert.match(cs[1].summary, /Mean 60\u00a0%/);
    assert.strictEqual(cs[1].opts.ymax, 1);
    assert.match(cs[2].summary, /0 now, peak 3; 3 starts/);
    /* waits up to 1200 s are drawn in minutes */
    assert.deepStrictEqual(cs[3].data.series[2].values, [null, 15, 20]);
    assert.strictEqual(cs[3].data.series[0].fmt(5), '5m');
    assert.match(cs[4].summary, /^2 preemptions/);
});

test('history charts say so when nothing was measured or started', () => {
    const hist = {capacity_gpus: 0, series: {t: [0], gpus_allocated: [0], gpus_idle: [0], utilisation: [null],
        pending: [0], started: [0], wait_p50_s: [null], wait_p90_s: [null], wait_p99_s: [null], preemptions: [0]}};
    const cs = Overview.historyCharts(hist);
    assert.match(cs[1].summary, /^Not measured/);
    assert.match(cs[3].summary, /^No job started/);
});

test('charts of counts have whole ticks: at least 0..5', () => {
    const zeros = {capacity_gpus: 8, series: {t: [0, 1], gpus_allocated: [0, 0], gpus_idle: [0, 0], utilisation: [null, null],
        pending: [0, 1], started: [0, 0], wait_p50_s: [null, null], wait_p90_s: [null, null], wait_p99_s: [null, null],
        preemptions: [0, 0]}};
    const cs = Overview.historyCharts(zeros);
    assert.strictEqual(cs[2].opts.ymax, 5);
    assert.strictEqual(cs[4].opts.ymax, 5);
    zeros.series.preemptions = [0, 40];
    assert.strictEqual(Overview.historyCharts(zeros)[4].opts.ymax, undefined);
});
