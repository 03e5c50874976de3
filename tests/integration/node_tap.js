/*
 * node_tap.js - a reporter for node's test runner that prints flat TAP
 * for prove: one "ok"/"not ok" line per leaf test, named by its path
 * ("group > case"), diagnostics as "# " lines, and the plan at the end.
 *
 *   node --test --test-reporter=./tests/integration/node_tap.js web/test/
 *
 * Node's own "tap" reporter nests subtests and writes a failure's details
 * as a YAML block holding the stack trace, which prove's YAML reader
 * rejects ("Badly formed hash line"): a failing test then reads as a TAP
 * parse error instead of a failure with its message. (web_unit.t runs it.)
 */
'use strict';

const util = require('node:util');

function diagLines(text) {
    return String(text).split('\n').filter((l) => l.length > 0).map((l) => '# ' + l + '\n').join('');
}

/* The message of a failure: the assertion's own (node wraps it in an
 * ERR_TEST_FAILURE whose cause it is), its first frame in a test file. */
function describe(err) {
    if (!err)
        return '';
    const e = err.code === 'ERR_TEST_FAILURE' && err.cause ? err.cause : err;
    let out = e && e.message !== undefined ? e.message : util.inspect(e);
    if (e && e.stack) {
        const frame = String(e.stack).split('\n').find((l) => /^\s+at .*\.test\.[cm]?js:\d+/.test(l));
        if (frame)
            out += '\n' + frame.trim();
    }
    return out;
}

module.exports = async function* flatTap(source) {
    const pending = [];  /* per nesting level: the finished leaves below it */
    let n = 0;
    let failed = 0;
    yield 'TAP version 13\n';
    for await (const ev of source) {
        const d = ev.data || {};
        if (ev.type === 'test:pass' || ev.type === 'test:fail') {
            const lvl = d.nesting || 0;
            const children = pending[lvl + 1] || [];
            pending[lvl + 1] = [];
            const self = {
                name: d.name,
                ok: ev.type === 'test:pass',
                skip: d.skip,
                todo: d.todo,
                why: ev.type === 'test:fail' ? describe(d.details && d.details.error) : ''
            };
            let leaves;
            if (children.length === 0) {
                leaves = [self];
            } else {
                leaves = children.map((c) => Object.assign({}, c, {name: d.name + ' > ' + c.name}));
                /* A parent that failed though its subtests passed (a hook,
                 * code after them): a leaf of its own. */
                if (!self.ok && children.every((c) => c.ok))
                    leaves.push(Object.assign(self, {name: d.name + ' (outside its subtests)'}));
            }
            if (lvl > 0) {
                (pending[lvl] = pending[lvl] || []).push(...leaves);
                continue;
            }
            let out = '';
            for (const l of leaves) {
                n++;
                let line = (l.ok ? 'ok ' : 'not ok ') + n + ' - ' + String(l.name).replace(/[\n#]/g, ' ');
                if (l.skip)
                    line += ' # SKIP' + (typeof l.skip === 'string' ? ' ' + l.skip : '');
                else if (l.todo)
                    line += ' # TODO' + (typeof l.todo === 'string' ? ' ' + l.todo : '');
                else if (!l.ok)
                    failed++;
                out += line + '\n';
                if (!l.ok)
                    out += diagLines(l.why);
            }
            yield out;
        } else if (ev.type === 'test:diagnostic') {
            yield diagLines(d.message);
        } else if (ev.type === 'test:stdout' || ev.type === 'test:stderr') {
            yield diagLines(d.message);
        }
    }
    yield '1..' + n + '\n';
    if (failed)
        yield '# failed ' + failed + ' of ' + n + '\n';
};
