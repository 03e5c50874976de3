/* Tests of 42-queues.js's pure parts: the grouping by cohort, a pool's
 * sums, a queue's bar segments and length, and the borrowing sentences. */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
global.Fmt = require('../js/00-format.js');
const Q = require('../js/42-queues.js');

function res(gpus, extra) {
    return Object.assign({gpus: gpus, cpus: 0, memory: 0}, extra || {});
}
function queue(name, cohort, nominal, used, borrowed, lent) {
    return {name: name, team: name, cohort: cohort, nominal: nominal === null ? {} : {gpus: nominal},
        used: res(used), borrowed: res(borrowed), lent: res(lent), opportunistic: res(0),
        pending: 0, running: 0, share: 0};
}
function item(kind, name, spec) {
    return {apiVersion: 'sluice/v1', kind: kind, metadata: {name: name}, spec: spec};
}
function member(q, spec) {
    return {q: q, spec: spec || {}};
}

test('the resource of a URL', () => {
    assert.strictEqual(Q.resOf(new URLSearchParams('res=memory')), 'memory');
    assert.strictEqual(Q.resOf(new URLSearchParams('res=disks')), 'gpus');
});

test('groups: cohorts by name with their queues, empty cohorts, unknown ones, then the queues without', () => {
    const queues = [queue('vision', 'pool', 4, 2, 0, 2), queue('default', null, null, 0, 0, 0),
        queue('nlp', 'pool', 3, 5, 2, 0), queue('stray', 'ghost', 1, 0, 0, 0)];
    const gs = Q.groups(queues, [item('Cohort', 'pool', {description: 'shared'}), item('Cohort', 'empty', {})],
        [item('Queue', 'nlp', {borrowingLimit: {gpus: 2}})]);
    assert.deepStrictEqual(gs.map((g) => [g.name, g.defined, g.members.map((m) => m.q.name)]),
        [['empty', true, []], ['ghost', false, ['stray']], ['pool', true, ['nlp', 'vision']], [null, false, ['default']]]);
    assert.strictEqual(gs[2].description, 'shared');
    assert.deepStrictEqual(gs[2].members[0].spec, {borrowingLimit: {gpus: 2}});
    assert.deepStrictEqual(gs[2].members[1].spec, {});
});

test('figures: a quota not set is null, limits from the spec', () => {
    const f = Q.figures(member(queue('a', 'p', null, 1, 0, 0), {lendingLimit: {gpus: 0}}), 'gpus');
    assert.strictEqual(f.nominal, null);
    assert.strictEqual(f.lendingLimit, 0);
    assert.strictEqual(f.borrowingLimit, null);
    assert.strictEqual(Q.figures(member(queue('a', 'p', 4, 1, 0, 0)), 'cpus').nominal, null);
});

test('pool sums the quotas and counts the queues without one', () => {
    const p = Q.pool([member(queue('a', 'p', 4, 2, 0, 2)), member(queue('b', 'p', 3, 5, 2, 0)),
        member(queue('c', 'p', null, 1, 0, 0))], 'gpus');
    assert.deepStrictEqual(p, {nominal: 7, used: 8, borrowed: 2, lent: 2, open: 1});
});

test('bar: use within nominal, lent, unused, borrowed, headroom to the limit', () => {
    const lender = Q.figures(member(queue('v', 'p', 4, 2, 0, 2)), 'gpus');
    assert.deepStrictEqual(Q.bar(lender).map((s) => [s.kind, s.value]),
        [['used', 2], ['lent', 2], ['unused', 0], ['borrowed', 0]]);
    const borrower = Q.figures(member(queue('n', 'p', 3, 5, 2, 0), {borrowingLimit: {gpus: 4}}), 'gpus');
    assert.deepStrictEqual(Q.bar(borrower).map((s) => [s.kind, s.value]),
        [['used', 3], ['lent', 0], ['unused', 0], ['borrowed', 2], ['headroom', 2]]);
    assert.strictEqual(Q.extent(borrower), 7);
    const none = Q.figures(member(queue('d', null, null, 1.5, 0, 0)), 'gpus');
    assert.deepStrictEqual(Q.bar(none), [{kind: 'used', value: 1.5}]);
    assert.strictEqual(Q.extent(none), 1.5);
    /* without a borrowing limit the bar is as long as what it borrows */
    assert.strictEqual(Q.extent(Q.figures(member(queue('n', 'p', 3, 5, 2, 0)), 'gpus')), 5);
});

test('bar segments add up to the nominal quota with what is borrowed', () => {
    const f = Q.figures(member(queue('x', 'p', 10, 7.5, 0, 1.25)), 'gpus');
    const segs = Q.bar(f);
    assert.strictEqual(segs.slice(0, 3).reduce((a, s) => a + s.value, 0), 10);
    assert.deepStrictEqual(segs.map((s) => s.value), [7.5, 1.25, 1.25, 0]);
});

test('flows: one lender pairs every borrower with it', () => {
    const ms = [member(queue('vision', 'p', 4, 2, 0, 2)), member(queue('nlp-research', 'p', 3, 5, 2, 0))];
    assert.deepStrictEqual(Q.flows(ms, 'gpus'), ['nlp-research borrows 2 GPUs, lent by vision.']);
});

test('flows: one borrower, several lenders', () => {
    const ms = [member(queue('a', 'p', 4, 1, 0, 1.5)), member(queue('b', 'p', 4, 2, 0, 0.5)),
        member(queue('c', 'p', 2, 4, 2, 0))];
    assert.deepStrictEqual(Q.flows(ms, 'gpus'), ['c borrows 2 GPUs, from what a (1.5) and b (0.5) lend.']);
});

test('flows: several of each are not paired, and it says so', () => {
    const ms = [member(queue('vision', 'p', 1800, 185.5, 0, 137.854)), member(queue('speech', 'p', 800, 505.5, 0, 25.145)),
        member(queue('robotics', 'p', 600, 745.5, 145.5, 0)), member(queue('nlp', 'p', 200, 217.5, 17.5, 0))];
    const out = Q.flows(ms, 'gpus');
    assert.deepStrictEqual(out.slice(0, 2), ['robotics borrows 145.5 GPUs.', 'nlp borrows 17.5 GPUs.']);
    assert.match(out[2], /^They borrow from what vision \(137\.85\) and speech \(25\.15\) lend; .*not who lends to whom/);
});

test('flows: nothing borrowed, and one-sided figures', () => {
    assert.deepStrictEqual(Q.flows([member(queue('a', 'p', 1, 0, 0, 0))], 'gpus'), ['No queue borrows or lends now.']);
    assert.match(Q.flows([member(queue('a', 'p', 1, 2, 1, 0))], 'gpus')[0], /^a borrows 1 GPU; no queue/);
    const mem = member(queue('a', 'p', 1, 0, 0, 0));
    mem.q.borrowed.memory = 2 * 1073741824;
    assert.strictEqual(Q.flows([mem, member(Object.assign(queue('b', 'p', 1, 0, 0, 0), {lent: res(0, {memory: 2 * 1073741824})}))], 'memory')[0],
        'a borrows 2\u00a0GiB, lent by b.');
});
