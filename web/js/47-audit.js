/*
 * 47-audit.js - the Audit page (/ui/audit), for auditors and admins (the
 * API answers anyone else 403, which the page shows as it comes):
 *
 * - the chain's verification (GET /v1/audit/verify: the live log against
 *   the newest signed checkpoint) with a "Verify now" button;
 * - the committed head signed now (GET /v1/audit/checkpoint) and the
 *   verifier key (GET /v1/audit/pubkey);
 * - downloads for an offline check: the whole log (GET /v1/audit/export,
 *   NDJSON pages of at most 100,000 records followed by their
 *   Sluice-Audit-Next header and joined byte for byte), the checkpoint and
 *   the key, with the `sluice audit verify -f` command that checks them;
 * - the log, filtered by actor, action, object, outcome and time, newest
 *   first, paged by seq (GET /v1/audit with order=desc and before, or
 *   after and ascending for newer pages), each record's details
 *   expandable.
 *
 * The filters live in the URL (?actor=&action=&object=&outcome=&from=&to=
 * &before=|&after=&limit=); from and to are RFC 3339 UTC there, local
 * time in the form.
 *
 * AuditLog (pure, loaded by node's test runner too): query -> the API's
 * parameters, the pages' seq bounds, the export's page walk and join,
 * the details' one-line summary, links of objects, local time <-> UTC.
 */
'use strict';

var AuditLog = (function () {
    var FILTERS = ['actor', 'action', 'object', 'outcome', 'from', 'to'];
    var LIMITS = [25, 50, 100, 500];
    var DEFAULT_LIMIT = 50;
    var EXPORT_PAGE = 100000;
    var FILES = {export: 'sluice-audit.ndjson', checkpoint: 'sluice-audit.checkpoint',
        pubkey: 'sluice-audit.pub'};

    /* The actions sluiced records (docs/audit.md, "In sluiced"; docs/cli.md
     * for the node and job commands): offered as suggestions, the filter
     * matches exactly. */
    var ACTIONS = ['apply', 'array.cancel', 'budget.exhausted', 'budget.warn', 'carbon.put',
        'job.attach', 'job.cancel', 'job.hold', 'job.place', 'job.preempt', 'job.reclaim',
        'job.release', 'job.requeue', 'job.submit', 'job.update', 'model.register',
        'model.stage', 'node.cordon', 'node.drain', 'node.uncordon', 'object.delete',
        'scan.import', 'token.create', 'token.revoke'];

    /* A URL query's value, trimmed; "" when absent. */
    function getter(query) {
        return function (k) {
            return (query.get(k) || '').trim();
        };
    }

    function seqOf(v) {
        return /^[0-9]{1,15}$/.test(v) && +v > 0 ? +v : null;
    }

    /* The page's state of a URL query: the filters as given, outcome ok,
     * refused or any (""), one of before/after (seq bounds; before wins),
     * limit one of LIMITS. */
    function parse(query) {
        var get = getter(query);
        var st = {};
        FILTERS.forEach(function (k) {
            st[k] = get(k);
        });
        if (st.outcome !== 'ok' && st.outcome !== 'refused')
            st.outcome = '';
        st.before = seqOf(get('before'));
        st.after = st.before ? null : seqOf(get('after'));
        var lim = parseInt(get('limit'), 10);
        st.limit = LIMITS.indexOf(lim) >= 0 ? lim : DEFAULT_LIMIT;
        var el = parseInt(get('export_limit'), 10);
        st.exportLimit = el >= 1 && el <= EXPORT_PAGE ? el : EXPORT_PAGE;
        return st;
    }

    function toQuery(st) {
        var q = {};
        FILTERS.forEach(function (k) {
            if (st[k])
                q[k] = st[k];
        });
        if (st.before)
            q.before = String(st.before);
        else if (st.after)
            q.after = String(st.after);
        if (st.limit !== DEFAULT_LIMIT)
            q.limit = String(st.limit);
        if (st.exportLimit !== EXPORT_PAGE)
            q.export_limit = String(st.exportLimit);
        return q;
    }

    /* GET /v1/audit's parameters: newest first from `before` (or the
     * newest); a page newer than `after` is asked for oldest first (the
     * records right after it) and shown reversed. */
    function apiParams(st) {
        var p = {};
        FILTERS.forEach(function (k) {
            if (st[k])
                p[k] = st[k];
        });
        p.limit = st.limit;
        if (st.after) {
            p.after = st.after;
            p.order = 'asc';
        } else {
            p.order = 'desc';
            if (st.before)
                p.before = st.before;
        }
        return p;
    }

    /* What a page of the API shows, newest first, and where its
     * neighbours are: {records, older: before-seq or null, newer:
     * after-seq or null}. `ans` is GET /v1/audit's answer for `st`.
     * From the newest page (no bound) there is nothing newer; a page
     * asked for with after that came back short reached the newest. */
    function page(st, ans) {
        var recs = (ans.records || []).slice();
        if (st.after)
            recs.reverse();
        var first = recs.length ? recs[0].seq : null;            /* the newest shown */
        var lastSeq = recs.length ? recs[recs.length - 1].seq : null; /* the oldest shown */
        var older = null, newer = null;
        if (recs.length) {
            if (st.after)
                older = lastSeq > 1 ? lastSeq : null;
            else
                older = ans.next !== null && ans.next !== undefined ? ans.next : null;
            if (st.before)
                newer = first;
            else if (st.after)
                newer = ans.next !== null && ans.next !== undefined ? first : null;
        } else {
            /* an empty page past either end: offer the way back */
            if (st.before)
                newer = st.before - 1;
            if (st.after)
                older = st.after + 1;
        }
        return {records: recs, older: older, newer: newer};
    }

    /* One line of a record's details, as `sluice audit log` prints them:
     * key=value (values as compact JSON, strings bare), cut at `max`. */
    function summary(details, max) {
        max = max || 72;
        if (!details || typeof details !== 'object')
            return '';
        var s = Object.keys(details).map(function (k) {
            var v = details[k];
            return k + '=' + (typeof v === 'string' ? v : JSON.stringify(v));
        }).join(' ');
        return s.length > max ? s.slice(0, max - 1) + '\u2026' : s;
    }

    /* The dashboard's page of an audited object, or null: a job, an
     * array (its first element, a job), a model (with a slash at the
     * end, as 48-models.js makes them: see its refHref). */
    function objectHref(obj) {
        var m = /^(job|array):([0-9]+)$/.exec(obj || '');
        if (m)
            return '/ui/jobs/' + m[2];
        m = /^model:([^/@\s]+@[^/\s]+)$/.exec(obj || '');
        if (m)
            return '/ui/models/' + encodeURIComponent(m[1]).replace(/%40/g, '@') + '/';
        return null;
    }

    /* The seq after which the next export page starts, from its
     * Sluice-Audit-Next header: a number, or null when the page was the
     * last (no header). */
    function nextAfter(header) {
        if (header === null || header === undefined || header === '')
            return null;
        var n = Number(header);
        if (!isFinite(n) || n < 0 || Math.floor(n) !== n)
            throw new Error('export: Sluice-Audit-Next is not a seq: ' + header);
        return n;
    }

    /* The whole log, page after page: fetchPage(after) resolves
     * {body, next} (the page's bytes as a Blob, string or Uint8Array, and
     * its Sluice-Audit-Next header or null). The bodies come back in order,
     * untouched, for joining: the export's pages end each with its last
     * line's newline, so their concatenation is the log. A next that does
     * not advance is refused rather than followed for ever.
     * onPage(pagesSoFar, after) reports progress. */
    function exportAll(fetchPage, onPage) {
        var parts = [];
        function step(after) {
            return Promise.resolve(fetchPage(after)).then(function (p) {
                parts.push(p.body);
                var n = nextAfter(p.next);
                if (onPage)
                    onPage(parts.length, n);
                if (n === null)
                    return parts;
                if (n <= after)
                    throw new Error('export: page after ' + after + ' says the next starts after ' + n);
                return step(n);
            });
        }
        return step(0);
    }

    /* The seq of the last record in a text of JSON lines (the tail of an
     * export), or null. */
    function lastSeq(text) {
        var t = String(text).replace(/\n+$/, '');
        var i = t.lastIndexOf('\n');
        var m = /^\{"seq":([0-9]+),/.exec(t.slice(i + 1));
        return m ? +m[1] : null;
    }

    /* The command that checks the downloads on another machine
     * (docs/cli.md, sluice audit verify -f EXPORT --checkpoint CKPT
     * --pubkey KEY). */
    function verifyCommand(files) {
        files = files || FILES;
        return 'sluice audit verify -f ' + files.export + ' --checkpoint ' + files.checkpoint +
            ' --pubkey ' + files.pubkey;
    }

    function pad(n) {
        return (n < 10 ? '0' : '') + n;
    }

    /* A datetime-local field's value (local time, "2026-12-03T10:11") as
     * the URL and the API take it: RFC 3339 UTC; "" stays "". */
    function localToIso(v) {
        if (!v)
            return '';
        var m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(v);
        if (!m)
            return v;
        var d = new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
        return d.toISOString().replace(/\.000Z$/, 'Z');
    }

    /* The reverse, for showing a URL's value in the field: "" when it is
     * not a time a field can show. */
    function isoToLocal(v) {
        if (!v)
            return '';
        var t = Date.parse(v);
        if (isNaN(t))
            return '';
        var d = new Date(t);
        return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' +
            pad(d.getHours()) + ':' + pad(d.getMinutes()) + (d.getSeconds() ? ':' + pad(d.getSeconds()) : '');
    }

    return {
        FILTERS: FILTERS, LIMITS: LIMITS, ACTIONS: ACTIONS, FILES: FILES, EXPORT_PAGE: EXPORT_PAGE,
        parse: parse, toQuery: toQuery, apiParams: apiParams, page: page, summary: summary,
        objectHref: objectHref, nextAfter: nextAfter, exportAll: exportAll, lastSeq: lastSeq,
        verifyCommand: verifyCommand, localToIso: localToIso, isoToLocal: isoToLocal
    };
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;
        var A = AuditLog;

        function shortHash(x) {
            return x ? h('code', {title: x}, x.slice(0, 16) + '\u2026') : '\u2014';
        }

        /* The verification's answer in words: ok or the first bad record. */
        function verifyView(v, at) {
            var ck = v.checkpoint || {};
            var box = h('div', {class: 'audit-verify'});
            box.appendChild(h('p', {class: 'audit-verdict'},
                v.ok ? Dom.badge('chain verified', 'ok') : Dom.badge('does not verify', 'bad'), ' ',
                v.ok ? Fmt.int(v.records) + ' records link up, and the newest signed checkpoint matches.' :
                    'The log does not verify against its chain or its newest signed checkpoint.'));
            if (!v.ok && v.error) {
                box.appendChild(Dom.message((v.error.record ? 'record ' + v.error.record + ': ' : '') +
                    v.error.message + (v.error.line ? ' (line ' + v.error.line + ')' : '')));
            }
            box.appendChild(Dom.kv([
                ['Records', Fmt.int(v.records)],
                ['Head', v.head ? h('code', {class: 'audit-hash'}, v.head) : null],
                ['Checkpoint', ck.size !== undefined ? Fmt.int(ck.size) + ' records, signed ' +
                    Fmt.time(Fmt.ms(ck.at)) : null],
                ['Checkpoint head', ck.head ? h('code', {class: 'audit-hash'}, ck.head) : null],
                ['Checked', Fmt.time(at)]
            ]));
            return box;
        }

        function detailsCell(r) {
            var text = A.summary(r.details, 72);
            var pre = h('pre', {class: 'audit-json'}, JSON.stringify(r.details, null, 2));
            return h('details', {class: 'audit-details'},
                h('summary', null, text || '(none)'),
                pre,
                Dom.kv([['prev', h('code', {class: 'audit-hash'}, r.prev)], ['hash', h('code', {class: 'audit-hash'}, r.hash)]]));
        }

        App.page('/audit', {
            title: 'Audit',
            render: function (ctx) {
                var st = A.parse(ctx.query);
                var verifyBox = h('section', {class: 'panel', 'aria-labelledby': 'audit-verify-h'});
                var keyBox = h('section', {class: 'panel', 'aria-labelledby': 'audit-ckpt-h'});
                var exportBox = h('section', {class: 'panel audit-export', 'aria-labelledby': 'audit-export-h'});
                var logBox = h('section', {class: 'audit-log', 'aria-labelledby': 'audit-log-h'});
                var top = h('div', {class: 'panels audit-panels'}, verifyBox, keyBox);

                ctx.main.appendChild(h('h1', null, 'Audit'));
                var gate = h('div');
                ctx.main.appendChild(gate);

                /* ---- verification ---- */
                var verifyOut = h('div', {'aria-live': 'polite'});
                var verifyBtn = h('button', {type: 'button', class: 'primary', id: 'audit-verify-now',
                    onclick: function () {
                        verify();
                    }}, 'Verify now');
                verifyBox.appendChild(h('div', {class: 'toolbar'}, h('h2', {id: 'audit-verify-h'}, 'Chain verification'),
                    h('span', {class: 'spacer'}), verifyBtn));
                verifyBox.appendChild(verifyOut);

                function verify() {
                    verifyBtn.disabled = true;
                    Dom.clear(verifyOut);
                    verifyOut.appendChild(h('p', {class: 'muted'}, 'Verifying the log\u2026'));
                    return Api.get('/v1/audit/verify').then(function (v) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(verifyOut);
                        verifyOut.appendChild(verifyView(v, Date.now()));
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(verifyOut);
                        verifyOut.appendChild(Dom.message(e));
                    }).then(function () {
                        verifyBtn.disabled = false;
                    });
                }

                /* ---- checkpoint and key ---- */
                var ckptPre = h('pre', {class: 'log audit-ckpt', tabindex: '0', 'aria-label': 'Signed checkpoint'});
                var keyCode = h('code', {class: 'audit-key'});
                keyBox.appendChild(h('div', {class: 'toolbar'}, h('h2', {id: 'audit-ckpt-h'}, 'Signed checkpoint'),
                    h('span', {class: 'spacer'}),
                    h('button', {type: 'button', onclick: function () {
                        loadCheckpoint();
                    }}, 'Sign the head now')));
                keyBox.appendChild(h('p', {class: 'muted'}, 'The committed head, signed by sluiced when asked. Keep a copy out of the operator\u2019s reach: a later rewrite or rollback of anything it covers fails against it.'));
                keyBox.appendChild(ckptPre);
                keyBox.appendChild(h('h3', null, 'Verifier key'));
                keyBox.appendChild(h('p', null, keyCode));
                keyBox.appendChild(h('p', {class: 'muted'}, 'Compare it with a copy obtained apart from this server: whoever runs sluiced holds the signing key.'));

                function loadCheckpoint() {
                    return Api.get('/v1/audit/checkpoint', null, {as: 'text'}).then(function (t) {
                        if (ctx.alive())
                            ckptPre.textContent = t;
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(ckptPre);
                        ckptPre.appendChild(document.createTextNode(e.message));
                    });
                }
                function loadKey() {
                    return Api.get('/v1/audit/pubkey', null, {as: 'text'}).then(function (t) {
                        if (ctx.alive())
                            keyCode.textContent = t.trim();
                    }, function (e) {
                        if (ctx.alive())
                            keyCode.textContent = e.message;
                    });
                }

                /* ---- downloads ---- */
                var progress = h('p', {class: 'muted', 'aria-live': 'polite'});
                var exportErr = h('div');
                var btns = [];

                function busy(on) {
                    btns.forEach(function (b) {
                        b.disabled = on;
                    });
                }

                function fetchPage(after) {
                    return Api.request('/v1/audit/export', {params: {after: after, limit: st.exportLimit},
                        as: 'response'}).then(function (res) {
                        var next = res.headers.get('Sluice-Audit-Next');
                        return res.blob().then(function (b) {
                            return {body: b, next: next};
                        });
                    });
                }

                function downloadExport() {
                    progress.textContent = 'Fetching the log\u2026';
                    return A.exportAll(fetchPage, function (n, next) {
                        if (next !== null)
                            progress.textContent = 'Fetched ' + n + ' page' + (n > 1 ? 's' : '') + ', through record ' +
                                Fmt.int(next) + '\u2026';
                    }).then(function (parts) {
                        var blob = new Blob(parts, {type: 'application/x-ndjson'});
                        return blob.slice(Math.max(0, blob.size - 70000)).text().then(function (tail) {
                            var last = A.lastSeq(tail);
                            var saved = Api.save(blob, A.FILES.export);
                            progress.textContent = 'Saved ' + saved.name + ': ' + (last ? Fmt.int(last) + ' records, ' : '') +
                                parts.length + ' page' + (parts.length > 1 ? 's' : '') + ', ' + Fmt.bytes(saved.size) + '.';
                            return saved;
                        });
                    });
                }

                function run(fn) {
                    return function () {
                        busy(true);
                        Dom.clear(exportErr);
                        Promise.resolve().then(fn).catch(function (e) {
                            if (ctx.alive()) {
                                progress.textContent = '';
                                exportErr.appendChild(Dom.message(e));
                            }
                        }).then(function () {
                            busy(false);
                        });
                    };
                }

                function dlCheckpoint() {
                    return Api.download('/v1/audit/checkpoint', null, A.FILES.checkpoint);
                }
                function dlKey() {
                    return Api.download('/v1/audit/pubkey', null, A.FILES.pubkey);
                }

                var allBtn = h('button', {type: 'button', class: 'primary', id: 'audit-download-all',
                    onclick: run(function () {
                        /* the checkpoint first: the export taken after it
                         * holds every record it signs */
                        return dlCheckpoint().then(downloadExport).then(dlKey).then(function () {
                            Dom.toast('Saved the checkpoint, the export and the key');
                        });
                    })}, 'Download all three');
                var exBtn = h('button', {type: 'button', id: 'audit-download-export', onclick: run(downloadExport)},
                    'Export (' + A.FILES.export + ')');
                var ckBtn = h('button', {type: 'button', id: 'audit-download-checkpoint', onclick: run(function () {
                    return dlCheckpoint().then(function (f) {
                        Dom.toast('Saved ' + f.name);
                    });
                })}, 'Checkpoint (' + A.FILES.checkpoint + ')');
                var kBtn = h('button', {type: 'button', id: 'audit-download-pubkey', onclick: run(function () {
                    return dlKey().then(function (f) {
                        Dom.toast('Saved ' + f.name);
                    });
                })}, 'Key (' + A.FILES.pubkey + ')');
                btns = [allBtn, exBtn, ckBtn, kBtn];
                exportBox.appendChild(h('h2', {id: 'audit-export-h'}, 'Export for offline verification'));
                exportBox.appendChild(h('p', null, 'The whole log as JSON lines, exactly as stored and hashed, with a checkpoint signed now and the verifier key. ' +
                    'Take the checkpoint before the export (\u201cDownload all three\u201d does): an export taken after it holds every record it signs.'));
                exportBox.appendChild(h('div', {class: 'toolbar'}, allBtn, exBtn, ckBtn, kBtn));
                exportBox.appendChild(progress);
                exportBox.appendChild(exportErr);
                exportBox.appendChild(h('p', null, 'Then, on a machine of your own:'));
                exportBox.appendChild(h('pre', {class: 'log audit-cmd'}, A.verifyCommand()));
                exportBox.appendChild(h('p', {class: 'muted'}, 'It checks every record\u2019s hash and link and that the signed head is in the export; without --checkpoint and --pubkey it checks the chain alone, and a cut tail cannot be told (docs/audit.md).'));

                /* ---- the log ---- */
                var form = h('form', {class: 'filters', 'aria-label': 'Filter the audit log'});
                var logOut = h('div');
                var logStatus = h('div', {'aria-live': 'polite'});
                var actions = h('datalist', {id: 'audit-actions'}, A.ACTIONS.map(function (a) {
                    return h('option', {value: a});
                }));

                function buildForm() {
                    Dom.clear(form);
                    form.appendChild(Dom.field({label: 'Actor', name: 'actor', value: st.actor,
                        placeholder: 'alice, scheduler', attrs: {autocomplete: 'off'}}));
                    form.appendChild(Dom.field({label: 'Action', name: 'action', value: st.action,
                        placeholder: 'job.submit', attrs: {list: 'audit-actions', autocomplete: 'off'}}));
                    form.appendChild(Dom.field({label: 'Object', name: 'object', value: st.object,
                        placeholder: 'job:42', attrs: {autocomplete: 'off'}}));
                    form.appendChild(Dom.field({label: 'Outcome', name: 'outcome', value: st.outcome,
                        options: [['', 'Any'], ['ok', 'ok'], ['refused', 'refused']]}));
                    form.appendChild(Dom.field({label: 'From (local time)', name: 'from', type: 'datetime-local',
                        value: A.isoToLocal(st.from)}));
                    form.appendChild(Dom.field({label: 'To (local time)', name: 'to', type: 'datetime-local',
                        value: A.isoToLocal(st.to)}));
                    form.appendChild(Dom.field({label: 'Per page', name: 'limit', value: String(st.limit),
                        options: A.LIMITS.map(function (l) {
                            return [String(l), String(l)];
                        })}));
                    form.appendChild(h('button', {type: 'submit', class: 'primary'}, 'Show'));
                    form.appendChild(h('button', {type: 'button', onclick: function () {
                        A.FILTERS.forEach(function (k) {
                            st[k] = '';
                        });
                        st.before = st.after = null;
                        buildForm();
                        apply();
                    }}, 'Clear'));
                    form.appendChild(actions);
                }

                function apply() {
                    ctx.setQuery(A.toQuery(st), {push: true});
                    loadLog(false);
                }

                form.addEventListener('submit', function (ev) {
                    ev.preventDefault();
                    var el = form.elements;
                    ['actor', 'action', 'object', 'outcome'].forEach(function (k) {
                        st[k] = el[k].value.trim();
                    });
                    st.from = A.localToIso(el.from.value);
                    st.to = A.localToIso(el.to.value);
                    st.limit = parseInt(el.limit.value, 10) || 50;
                    st.before = st.after = null;
                    apply();
                });

                function filterLink(k, v) {
                    var q = A.toQuery(Object.assign({}, st, {before: null, after: null}));
                    q[k] = v;
                    return Dom.link('/ui/audit?' + new URLSearchParams(q).toString(), v,
                        {title: 'Only the records of ' + k + ' ' + v});
                }

                var COLS = [
                    {key: 'seq', label: 'Seq', num: true},
                    {key: 'time', label: 'Time', render: function (r) {
                        return h('time', {datetime: r.time, title: r.time}, Fmt.time(Fmt.ms(r.time)));
                    }},
                    {key: 'actor', label: 'Actor', render: function (r) {
                        return filterLink('actor', r.actor);
                    }},
                    {key: 'action', label: 'Action', render: function (r) {
                        return filterLink('action', r.action);
                    }},
                    {key: 'object', label: 'Object', render: function (r) {
                        var href = A.objectHref(r.object);
                        return href ? Dom.link(href, r.object) : r.object || '\u2014';
                    }},
                    {key: 'outcome', label: 'Outcome', render: function (r) {
                        return Dom.badge(r.outcome, r.outcome === 'ok' ? 'ok' : 'refused');
                    }},
                    {key: 'details', label: 'Details', render: detailsCell}
                ];

                var logReq = 0;
                function loadLog(focusTable, answer) {
                    var my = ++logReq;
                    Dom.clear(logStatus);
                    logStatus.appendChild(h('p', {class: 'muted'}, 'Loading\u2026'));
                    return (answer || Api.get('/v1/audit', A.apiParams(st))).then(function (ans) {
                        if (!ctx.alive() || my !== logReq)
                            return;
                        Dom.clear(logStatus);
                        var pg = A.page(st, ans);
                        Dom.clear(logOut);
                        var filtered = A.FILTERS.some(function (k) {
                            return st[k];
                        });
                        logOut.appendChild(Dom.table(COLS, pg.records, {
                            caption: pg.records.length ? 'Records ' + Fmt.int(pg.records[0].seq) + ' down to ' +
                                Fmt.int(pg.records[pg.records.length - 1].seq) + ', newest first' +
                                (filtered ? ', filtered' : '') : null,
                            empty: filtered ? 'No record matches these filters here.' : 'No records here.'
                        }));
                        var nav = h('div', {class: 'pager'},
                            h('button', {type: 'button', id: 'audit-newer', disabled: pg.newer === null, onclick: function () {
                                st.before = null;
                                st.after = pg.newer;
                                ctx.setQuery(A.toQuery(st), {push: true});
                                loadLog(true);
                            }}, '\u2190 Newer'),
                            h('button', {type: 'button', disabled: !(st.before || st.after), onclick: function () {
                                st.before = st.after = null;
                                ctx.setQuery(A.toQuery(st), {push: true});
                                loadLog(true);
                            }}, 'Newest'),
                            h('button', {type: 'button', id: 'audit-older', disabled: pg.older === null, onclick: function () {
                                st.after = null;
                                st.before = pg.older;
                                ctx.setQuery(A.toQuery(st), {push: true});
                                loadLog(true);
                            }}, 'Older \u2192'));
                        logOut.appendChild(nav);
                        if (focusTable) {
                            var cap = logOut.querySelector('caption');
                            var t = logOut.querySelector('table');
                            if (t) {
                                t.setAttribute('tabindex', '-1');
                                t.focus({preventScroll: true});
                                (cap || t).scrollIntoView({block: 'nearest'});
                            }
                        }
                    }, function (e) {
                        if (!ctx.alive() || my !== logReq)
                            return;
                        Dom.clear(logStatus);
                        Dom.clear(logOut);
                        logOut.appendChild(Dom.message(e));
                    });
                }

                logBox.appendChild(h('h2', {id: 'audit-log-h'}, 'Log'));
                logBox.appendChild(form);
                logBox.appendChild(logStatus);
                logBox.appendChild(logOut);

                /* The log's first page says whether this token may read
                 * it: a refusal of the role is shown as the API words it,
                 * alone. */
                gate.appendChild(h('p', {class: 'muted'}, 'Loading\u2026'));
                var first = Api.get('/v1/audit', A.apiParams(st));
                first.then(function () {
                    return true;
                }, function (e) {
                    return e.status !== 403 && e.status !== 401 ? true : e;
                }).then(function (ok) {
                    if (!ctx.alive())
                        return;
                    Dom.clear(gate);
                    if (ok !== true) {
                        gate.appendChild(Dom.message(ok));
                        gate.appendChild(h('p', null, 'The audit log is read by auditors and admins.'));
                        return;
                    }
                    gate.appendChild(h('p', {class: 'muted'}, 'Every state-changing request, accepted or refused, and every scheduler decision, hash-chained and signed (docs/audit.md).'));
                    gate.appendChild(top);
                    gate.appendChild(exportBox);
                    gate.appendChild(logBox);
                    buildForm();
                    verify();
                    loadCheckpoint();
                    loadKey();
                    loadLog(false, first);
                });
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = AuditLog;
