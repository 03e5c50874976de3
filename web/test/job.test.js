/*
 * job.test.js - the job page's pure parts (web/js/44-job.js): blockers and
 * the ETA in words, which actions are offered, when a log is followed, an
 * event's words.
 */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
global.Fmt = require('../js/00-format.js');
const P = require('../js/44-job.js');

test('blockerText: every kind the scheduler gives, with its numbers', () => {
    const t = (b) => P.blockerText(b);
    assert.deepStrictEqual(t({kind: 'user_limit', queue: 'vision', user: 'alice', resource: 'gpu', used: 2, limit: 2,
        would_use: 3, short: 1}), {title: 'Per-user limit of queue vision',
        text: 'alice uses 2 GPU of 2 GPU, would use 3 GPU, short by 1 GPU'});
    assert.strictEqual(t({kind: 'quota', queue: 'q', resource: 'memory', used: 1073741824, limit: 2147483648}).text,
        'the queue uses 1\u00a0GiB of 2\u00a0GiB');
    assert.strictEqual(t({kind: 'model_quota', queue: 'q', resource: 'gpu[H100]', used: 4, limit: 4, short: 1}).text,
        'the queue uses 4 GPU[H100] of 4 GPU[H100], short by 1 GPU[H100]');
    assert.match(t({kind: 'cannot_run', cause: 'cluster', field: 'spec.resources.gpus', detail: 'cannot run: 8 GPUs'}).title,
        /no node or placement holds it/);
    assert.strictEqual(t({kind: 'cannot_run', cause: 'cluster', field: 'spec.resources.gpus', detail: 'cannot run: 8 GPUs'}).text,
        'spec.resources.gpus: cannot run: 8 GPUs');
    const nodes = t({kind: 'nodes', nodes: 3, nodes_rejected: {gpus: 2, gpu_model: 0, unschedulable: 1},
        unschedulable_nodes: [{node: 'n3', why: 'draining: disk swap'}]});
    assert.strictEqual(nodes.text, '3 nodes looked at: 2 too few free GPUs, 1 take no work; out of service: n3 (draining: disk swap)');
    assert.strictEqual(t({kind: 'gang', tasks: 4, tasks_fit: 3, topology: 'same-node'}).text,
        '3 of its 4 tasks fit (same-node); all start together or none');
    assert.match(t({kind: 'preempting', victims: [4, 5]}).text, /4, 5$/);
    assert.match(t({kind: 'backoff', until: '2026-12-01T10:00:00Z'}).text, /waits until 2026-12-01/);
    assert.strictEqual(t({kind: 'reservation', detail: 'held for job 3'}).text, 'held for job 3');
    assert.strictEqual(t({kind: 'cohort', cohort: 'pool', detail: 'lends 0'}).text, 'lends 0');
    assert.deepStrictEqual(t({kind: 'new_kind', a: 1, b: {c: 2}}), {title: 'new_kind', text: 'a 1, b {"c":2}'});
});

test('etaText: the basis in words, none for a job that has none', () => {
    const now = Date.parse('2026-12-01T10:00:00Z');
    assert.match(P.etaText({state: 'Pending', eta: '2026-12-01T10:30:00Z', eta_basis: 'reservation'}, now),
        /in 30m\): the start its backfill reservation plans$/);
    assert.match(P.etaText({state: 'Pending', eta: '2026-12-01T11:00:00Z', eta_basis: 'max_runtime'}, now),
        /an estimate/);
    assert.match(P.etaText({state: 'Pending', eta: null, eta_basis: 'none'}, now), /^no estimate/);
    assert.strictEqual(P.etaText({state: 'Succeeded', eta: null}, now), null);
});

test('actions: writers on their own jobs, team-admins and admins on any they see', () => {
    const roles = {admin: ['submit', 'manage'], 'team-admin': ['submit', 'manage'], member: ['submit'], viewer: [],
        auditor: []};
    const can = (role) => (w) => roles[role].indexOf(w) >= 0;
    const pending = {user: 'alice', state: 'Pending', held: false};
    assert.deepStrictEqual(P.actions(pending, {user: 'alice'}, can('member')), {cancel: true, hold: true, release: false});
    assert.deepStrictEqual(P.actions(pending, {user: 'bob'}, can('member')), {cancel: false, hold: false, release: false});
    assert.deepStrictEqual(P.actions(pending, {user: 'tina'}, can('team-admin')), {cancel: true, hold: true, release: false});
    assert.deepStrictEqual(P.actions(pending, {user: 'alice'}, can('viewer')), {cancel: false, hold: false, release: false});
    assert.deepStrictEqual(P.actions(Object.assign({}, pending, {held: true}), {user: 'alice'}, can('member')),
        {cancel: true, hold: false, release: true});
    assert.deepStrictEqual(P.actions({user: 'alice', state: 'Running'}, {user: 'alice'}, can('member')),
        {cancel: true, hold: false, release: false});
    assert.deepStrictEqual(P.actions({user: 'alice', state: 'Failed'}, {user: 'root'}, can('admin')),
        {cancel: false, hold: false, release: false});
    assert.deepStrictEqual(P.actions(null, {user: 'a'}, can('admin')), {cancel: false, hold: false, release: false});
});

test('keepFollowing: while the job lives, and once ended until nothing more comes', () => {
    assert.ok(P.keepFollowing('Running', 0));
    assert.ok(P.keepFollowing('Succeeded', 12));
    assert.ok(!P.keepFollowing('Succeeded', 0));
    assert.ok(!P.keepFollowing('Cancelled', 0));
});

test('eventText: the state change and the message', () => {
    assert.strictEqual(P.eventText({type: 'state', from: 'Pending', to: 'Running', message: null}), 'Pending \u2192 Running');
    assert.strictEqual(P.eventText({type: 'state', from: null, to: 'Pending'}), 'new \u2192 Pending');
    assert.strictEqual(P.eventText({type: 'hold', from: 'Pending', to: 'Pending', message: 'held by alice'}), 'held by alice');
    assert.strictEqual(P.eventText({type: 'launched', from: 'Running', to: 'Running', message: null}), '');
});
