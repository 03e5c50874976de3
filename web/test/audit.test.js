/* Unit tests of AuditLog (web/js/47-audit.js): the page's state and the
 * API's parameters, paging by seq, the export's page walk and join, the
 * details' summary, object links, local time <-> UTC. */
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const A = require('../js/47-audit.js');

/* The page's state of a query given as an object. */
const parse = (o) => A.parse(new URLSearchParams(o));

function recs(seqs) {
    return seqs.map((s) => ({seq: s, time: '2026-12-03T10:11:12.345Z', actor: 'a', action: 'x', object: '',
        outcome: 'ok', details: {}, prev: '', hash: ''}));
}

test('parse: filters, one bound, limits', () => {
    const st = parse(new URLSearchParams('actor=alice&outcome=maybe&before=40&after=3&limit=7'));
    assert.strictEqual(st.actor, 'alice');
    assert.strictEqual(st.outcome, '');
    assert.strictEqual(st.before, 40);
    assert.strictEqual(st.after, null, 'before wins');
    assert.strictEqual(st.limit, 50);
    assert.strictEqual(st.exportLimit, A.EXPORT_PAGE);
    const x = parse({outcome: 'refused', after: '12', limit: '500', export_limit: '3', before: '-1'});
    assert.strictEqual(x.outcome, 'refused');
    assert.strictEqual(x.after, 12);
    assert.strictEqual(x.before, null);
    assert.strictEqual(x.limit, 500);
    assert.strictEqual(x.exportLimit, 3);
    assert.strictEqual(parse({export_limit: '100001'}).exportLimit, A.EXPORT_PAGE);
    assert.strictEqual(parse({before: '0'}).before, null);
    assert.deepStrictEqual(A.toQuery(parse({})), {});
    assert.deepStrictEqual(A.toQuery(x), {outcome: 'refused', after: '12', limit: '500', export_limit: '3'});
});

test('apiParams: newest first down from before; ascending up from after', () => {
    assert.deepStrictEqual(A.apiParams(parse({})), {limit: 50, order: 'desc'});
    assert.deepStrictEqual(A.apiParams(parse({action: 'job.submit', before: '90'})),
        {action: 'job.submit', limit: 50, order: 'desc', before: 90});
    assert.deepStrictEqual(A.apiParams(parse({after: '10', limit: '25'})), {limit: 25, order: 'asc', after: 10});
});

test('page: the newest page has nothing newer; older from next', () => {
    const st = parse({limit: '25'});
    const pg = A.page(st, {records: recs([100, 99, 98]), next: 98});
    assert.deepStrictEqual(pg.records.map((r) => r.seq), [100, 99, 98]);
    assert.strictEqual(pg.newer, null);
    assert.strictEqual(pg.older, 98);
    assert.strictEqual(A.page(st, {records: recs([3, 2, 1]), next: null}).older, null, 'the oldest page');
});

test('page: a page before SEQ offers newer after its newest', () => {
    const pg = A.page(parse({before: '98'}), {records: recs([97, 96]), next: 96});
    assert.strictEqual(pg.newer, 97);
    assert.strictEqual(pg.older, 96);
});

test('page: a page after SEQ comes oldest first and is shown newest first', () => {
    const pg = A.page(parse({after: '96'}), {records: recs([97, 98]), next: 98});
    assert.deepStrictEqual(pg.records.map((r) => r.seq), [98, 97]);
    assert.strictEqual(pg.older, 97);
    assert.strictEqual(pg.newer, 98, 'a full page: there may be newer');
    const end = A.page(parse({after: '98'}), {records: recs([99, 100]), next: null});
    assert.strictEqual(end.newer, null, 'short: the newest reached');
    assert.strictEqual(end.older, 99);
});

test('page: an empty page past an end offers the way back', () => {
    assert.deepStrictEqual(A.page(parse({before: '1'}), {records: [], next: null}),
        {records: [], older: null, newer: 0});
    const e = A.page(parse({after: '500'}), {records: [], next: null});
    assert.strictEqual(e.older, 501);
    assert.strictEqual(e.newer, null);
});

test('exportAll follows Sluice-Audit-Next and joins the pages exactly', async () => {
    const lines = [];
    for (let i = 1; i <= 7; i++)
        lines.push('{"seq":' + i + ',"x":"\u00e9"}\n');
    const asked = [];
    const fetchPage = (after) => {
        asked.push(after);
        const page = lines.slice(after, after + 3);
        return Promise.resolve({body: page.join(''), next: page.length === 3 ? String(after + 3) : null});
    };
    const progress = [];
    const parts = await A.exportAll(fetchPage, (n, next) => progress.push([n, next]));
    assert.deepStrictEqual(asked, [0, 3, 6]);
    assert.strictEqual(parts.join(''), lines.join(''));
    assert.deepStrictEqual(progress, [[1, 3], [2, 6], [3, null]]);
    /* a full last page: the next one is empty and ends it */
    const six = lines.slice(0, 6);
    const p2 = await A.exportAll((after) => {
        const page = six.slice(after, after + 3);
        return {body: page.join(''), next: page.length === 3 ? String(after + 3) : null};
    });
    assert.strictEqual(p2.length, 3);
    assert.strictEqual(p2.join(''), six.join(''));
});

test('exportAll refuses a next that does not advance, and a bad header', async () => {
    await assert.rejects(A.exportAll(() => ({body: '', next: '0'})), /does not advance|next starts after 0/);
    await assert.rejects(A.exportAll((after) => ({body: '', next: after ? '5' : '5'})), /after 5/);
    await assert.rejects(A.exportAll(() => ({body: '', next: 'x'})), /not a seq/);
    assert.strictEqual(A.nextAfter(null), null);
    assert.strictEqual(A.nextAfter(''), null);
    assert.strictEqual(A.nextAfter('100000'), 100000);
});

test('lastSeq reads the last line of an export', () => {
    assert.strictEqual(A.lastSeq('{"seq":1,"a":1}\n{"seq":22,"a":2}\n'), 22);
    assert.strictEqual(A.lastSeq('partial line"}\n{"seq":7,"b":{}}\n'), 7);
    assert.strictEqual(A.lastSeq(''), null);
});

test('summary: key=value as the CLI prints, cut with an ellipsis', () => {
    assert.strictEqual(A.summary({gpus: 2, queue: 'research', x: null, l: [1]}), 'gpus=2 queue=research x=null l=[1]');
    const long = A.summary({message: 'm'.repeat(100)}, 20);
    assert.strictEqual(long.length, 20);
    assert.ok(long.endsWith('\u2026'));
    assert.strictEqual(A.summary({}), '');
    assert.strictEqual(A.summary(null), '');
});

test('objectHref: jobs, arrays and models have pages', () => {
    assert.strictEqual(A.objectHref('job:42'), '/ui/jobs/42');
    assert.strictEqual(A.objectHref('array:7'), '/ui/jobs/7');
    assert.strictEqual(A.objectHref('model:resnet@1.0'), '/ui/models/resnet@1.0/');
    assert.strictEqual(A.objectHref('queue:research'), null);
    assert.strictEqual(A.objectHref('job:4x'), null);
    assert.strictEqual(A.objectHref(''), null);
});

test('verifyCommand names the downloads', () => {
    assert.strictEqual(A.verifyCommand(),
        'sluice audit verify -f sluice-audit.ndjson --checkpoint sluice-audit.checkpoint --pubkey sluice-audit.pub');
});

test('localToIso and isoToLocal round-trip in the local zone', () => {
    assert.strictEqual(A.localToIso(''), '');
    const iso = A.localToIso('2026-12-03T10:11');
    assert.match(iso, /^2026-12-0[23]T\d\d:11:00Z$/);
    assert.strictEqual(Date.parse(iso), new Date(2026, 11, 3, 10, 11).getTime());
    assert.strictEqual(A.isoToLocal(iso), '2026-12-03T10:11');
    assert.strictEqual(A.isoToLocal(A.localToIso('2026-12-03T10:11:05')), '2026-12-03T10:11:05');
    assert.strictEqual(A.isoToLocal('garbage'), '');
    assert.strictEqual(A.localToIso('2026-12-03'), '2026-12-03', 'not a field value: as it is');
});
