/* Unit tests of ModelLineage (web/js/48-models.js): references, stages,
 * version order, the lineage graph and its layout. */
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const L = require('../js/48-models.js');

const LIN = {
    model: {name: 'resnet', version: '1.0', team: 'vision', digest: 'sha256:' + 'ab'.repeat(32),
        uri: 's3://m/1.0', metrics: {}, job: 3, stage: 'production', history: []},
    job: {id: 3, name: 'train', user: 'alice', team: 'vision', queue: 'vision', state: 'Succeeded',
        usage: {gpu_hours: 0.5, cu: 2, energy_kwh: 0.1, energy_measured: false, cost: 1.25, currency: 'USD', co2_kg: 0.01},
        image: {ref: 'registry.internal/ml/train@sha256:' + '01'.repeat(32), digest: 'sha256:' + '01'.repeat(32)},
        code: {repo: 'https://git.example/vision/resnet', commit: '0123abc'},
        datasets: [{name: 'imagenet', version: 'v3', digest: 'sha256:' + '11'.repeat(32), mode: 'ro'},
            {name: 'scratch', version: '1', digest: '', mode: 'rw'}]}
};

test('parseRef, refHref and modelHref', () => {
    assert.deepStrictEqual(L.parseRef('resnet@1.0'), {name: 'resnet', version: '1.0'});
    assert.strictEqual(L.parseRef('resnet'), null);
    assert.strictEqual(L.parseRef('a@b@c'), null);
    assert.strictEqual(L.refHref('resnet@1.0'), '/ui/models/resnet@1.0');
    assert.strictEqual(L.modelHref({name: 'llama-ft', version: '0.3_rc-1'}), '/ui/models/llama-ft@0.3_rc-1');
    /* two segments under /ui/: sluiced serves the dashboard for it, dots
     * and all */
    assert.strictEqual(L.modelHref({name: 'm', version: '1.2.3'}), '/ui/models/m@1.2.3');
});

test('safeUrl links http(s) only', () => {
    assert.strictEqual(L.safeUrl('https://git.example/x'), 'https://git.example/x');
    assert.strictEqual(L.safeUrl('javascript:alert(1)'), null);
    assert.strictEqual(L.safeUrl('git@host:x.git'), null);
    assert.strictEqual(L.safeUrl(''), null);
});

test('nextStages: every other stage, none from archived', () => {
    assert.deepStrictEqual(L.nextStages('none'), ['staging', 'production', 'archived']);
    assert.deepStrictEqual(L.nextStages('production'), ['none', 'staging', 'archived']);
    assert.deepStrictEqual(L.nextStages('archived'), []);
});

test('compareVersions and sortModels: natural order, newest first per name', () => {
    assert.ok(L.compareVersions('1.10', '1.9') > 0);
    assert.ok(L.compareVersions('1.0', '1.0.1') < 0);
    assert.strictEqual(L.compareVersions('v2', 'v2'), 0);
    const s = L.sortModels([{name: 'b', version: '1'}, {name: 'a', version: '1.9'}, {name: 'a', version: '1.10'}]);
    assert.deepStrictEqual(s.map((m) => m.name + '@' + m.version), ['a@1.10', 'a@1.9', 'b@1']);
});

test('graph: model <- job <- image, code, datasets, with links where there are pages', () => {
    const g = L.graph(LIN);
    assert.deepStrictEqual(g.nodes.map((n) => n.id), ['model', 'job', 'image', 'code', 'dataset-0', 'dataset-1']);
    assert.deepStrictEqual(g.edges, [{from: 'job', to: 'model'}, {from: 'image', to: 'job'}, {from: 'code', to: 'job'},
        {from: 'dataset-0', to: 'job'}, {from: 'dataset-1', to: 'job'}]);
    const by = byId(g.nodes);
    assert.strictEqual(by.job.href, '/ui/jobs/3');
    assert.strictEqual(by.model.href, '/ui/models/resnet@1.0');
    assert.strictEqual(by.code.href, 'https://git.example/vision/resnet');
    assert.strictEqual(by.code.external, true);
    assert.strictEqual(by.image.href, null);
    assert.match(by['dataset-1'].label, /read-write, no digest recorded/);
    assert.match(by.image.label, /digest sha256:0101/);
    /* no job: the model alone; a code URL that is not http(s): no link */
    assert.deepStrictEqual(L.graph({model: LIN.model, job: null}), {nodes: [L.graph(LIN).nodes[0]], edges: []});
    const odd = L.graph({model: LIN.model, job: Object.assign({}, LIN.job, {code: {repo: 'git@h:x', commit: 'abcdef0'}})});
    assert.strictEqual(odd.nodes.filter((n) => n.id === 'code')[0].href, null);
});

/* The nodes by their id. */
function byId(nodes) {
    const by = {};
    nodes.forEach((n) => {
        by[n.id] = n;
    });
    return by;
}

function overlaps(a, b) {
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

function checkLayout(lay, width) {
    lay.nodes.forEach((n, i) => {
        assert.ok(n.x >= 0 && n.y >= 0, n.id + ' inside');
        assert.ok(n.x + n.w <= lay.width + 0.001, n.id + ' within the width');
        assert.ok(n.y + n.h <= lay.height + 0.001, n.id + ' within the height');
        lay.nodes.slice(i + 1).forEach((m) => assert.ok(!overlaps(n, m), n.id + ' and ' + m.id + ' overlap'));
        const chars = Math.floor((n.w - 20) / 7.2);
        n.text.forEach((t) => assert.ok(t.length <= chars, n.id + "'s text fits: " + t));
    });
    if (width)
        assert.ok(lay.width <= width, 'no wider than its box');
}

test('layout left to right: inputs, then the job, then the model; edges from side to side', () => {
    const lay = L.layout(L.graph(LIN), 900, 640);
    assert.strictEqual(lay.orient, 'lr');
    checkLayout(lay, 900);
    const by = byId(lay.nodes);
    assert.ok(by.image.x < by.job.x && by.job.x < by.model.x);
    assert.strictEqual(by.job.y, by.model.y);
    assert.strictEqual(by.image.x, by['dataset-1'].x);
    const e = lay.edges.filter((x) => x.from === 'job')[0];
    assert.ok(e.d.startsWith('M' + (by.job.x + by.job.w) + ' ' + (by.job.y + by.job.h / 2)));
    assert.ok(e.d.endsWith(by.model.x + ' ' + (by.model.y + by.model.h / 2)));
});

test('layout top down on a narrow box: inputs stacked over the job, the model under it', () => {
    const lay = L.layout(L.graph(LIN), 360, 640);
    assert.strictEqual(lay.orient, 'tb');
    checkLayout(lay, 360);
    const by = byId(lay.nodes);
    assert.ok(by['dataset-1'].y + by['dataset-1'].h < by.job.y);
    assert.ok(by.job.y + by.job.h < by.model.y);
    lay.edges.filter((e) => e.to === 'job').forEach((e) => assert.ok(e.d.endsWith('V' + by.job.y)));
    /* long texts are cut to the box */
    assert.ok(by.image.text[1].endsWith('\u2026'));
});

test('layout of a model without a job, and fit', () => {
    const lay = L.layout(L.graph({model: LIN.model, job: null}), 800);
    assert.strictEqual(lay.nodes.length, 1);
    assert.strictEqual(lay.edges.length, 0);
    checkLayout(lay, 800);
    assert.strictEqual(L.fit('abcdef', 4), 'abc\u2026');
    assert.strictEqual(L.fit('abc', 4), 'abc');
    assert.strictEqual(L.fit(null, 4), '');
});
