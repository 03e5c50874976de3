/*
 * 42-queues.js - the Queues and cohorts page (/ui/queues, ?res=gpus|cpus|
 * memory): per cohort, a bar of its pool (each queue's nominal quota, what
 * it uses of it, what it lends, what it leaves unused), a bar per queue on
 * one scale (its use within nominal, what it lends, what it borrows beyond
 * nominal and may still borrow up to its limit), who borrows and who lends
 * in words, and a table of every figure: nominal, used, borrowed, lent,
 * borrowing and lending limits, user limit, opportunistic use, pending
 * (a link to those jobs) and running jobs, share. Queues without a cohort
 * come last, in their own group.
 *
 * Reads GET /v1/queues (use, borrowing, lending, jobs), GET
 * /v1/objects/cohort (descriptions) and GET /v1/objects/queue (limits:
 * spec.borrowingLimit, spec.lendingLimit, spec.userLimit, weight), again
 * every 10 s; the page is built again only when an answer changed.
 * The API gives each queue's borrowed and lent amounts, not who lends to
 * whom: the words pair them only where the figures do (one lender).
 *
 * QueuesView (pure, loaded by node's test runner): the resource of a URL,
 * amounts, the grouping by cohort, a pool's sums, a queue's bar segments,
 * the borrowing statements.
 */
'use strict';

var QueuesView = (function () {
    var RESOURCES = [['gpus', 'GPUs'], ['cpus', 'CPUs'], ['memory', 'Memory']];
    var EPS = 1e-6;
    var POLL_MS = 10000;

    function resOf(query) {
        var r = query && query.get ? query.get('res') : null;
        return r === 'cpus' || r === 'memory' ? r : 'gpus';
    }

    /* An amount of resource `res` in a resource object, or null when the
     * object does not have it (a quota that is not set: not limited). */
    function amount(obj, res) {
        if (!obj || typeof obj[res] !== 'number')
            return null;
        return obj[res];
    }

    /* An amount in words: GPUs to two decimals, CPUs to three, memory in
     * binary units. */
    function fmt(res, v) {
        if (v === null || v === undefined)
            return '\u2014';
        if (res === 'memory')
            return Fmt.bytes(v);
        return Fmt.num(v, res === 'cpus' ? 3 : 2);
    }

    function unit(res, v) {
        if (res === 'memory')
            return fmt(res, v);
        return fmt(res, v) + (res === 'gpus' ? (Math.abs(v - 1) < EPS ? ' GPU' : ' GPUs') : (Math.abs(v - 1) < EPS ? ' CPU' : ' CPUs'));
    }

    function byName(a, b) {
        return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    }

    /* The queues (GET /v1/queues) with their specs (GET /v1/objects/queue
     * items) grouped by cohort: [{name, description, defined (a Cohort
     * object exists), members: [{q, spec}]}] by name (cohorts without
     * queues too), then {name: null, members} for the queues without a
     * cohort when there are any. */
    function groups(queues, cohortItems, queueItems) {
        var specs = Object.create(null), out = Object.create(null), none = [];
        (queueItems || []).forEach(function (it) {
            specs[it.metadata.name] = it.spec || {};
        });
        (cohortItems || []).forEach(function (it) {
            out[it.metadata.name] = {name: it.metadata.name, description: (it.spec || {}).description || '',
                defined: true, members: []};
        });
        (queues || []).forEach(function (q) {
            var m = {q: q, spec: specs[q.name] || {}};
            if (!q.cohort) {
                none.push(m);
                return;
            }
            if (!out[q.cohort])
                out[q.cohort] = {name: q.cohort, description: '', defined: false, members: []};
            out[q.cohort].members.push(m);
        });
        var list = Object.keys(out).sort().map(function (k) {
            out[k].members.sort(function (a, b) {
                return byName(a.q, b.q);
            });
            return out[k];
        });
        if (none.length) {
            none.sort(function (a, b) {
                return byName(a.q, b.q);
            });
            list.push({name: null, description: '', defined: false, members: none});
        }
        return list;
    }

    /* The figures of one queue for resource `res`: nominal (null: no
     * quota), used, borrowed, lent, opportunistic, and the limits
     * (null: none). */
    function figures(m, res) {
        var q = m.q, s = m.spec || {};
        return {
            nominal: amount(q.nominal, res),
            used: amount(q.used, res) || 0,
            borrowed: amount(q.borrowed, res) || 0,
            lent: amount(q.lent, res) || 0,
            opportunistic: amount(q.opportunistic, res) || 0,
            borrowingLimit: amount(s.borrowingLimit, res),
            lendingLimit: amount(s.lendingLimit, res),
            userLimit: amount(s.userLimit, res)
        };
    }

    /* A cohort's pool for `res`: the sum of its queues' nominal quotas
     * (queues with a quota), used, borrowed and lent; `open` counts the
     * queues without a quota of it. */
    function pool(members, res) {
        var p = {nominal: 0, used: 0, borrowed: 0, lent: 0, open: 0};
        members.forEach(function (m) {
            var f = figures(m, res);
            if (f.nominal === null)
                p.open++;
            else
                p.nominal += f.nominal;
            p.used += f.used;
            p.borrowed += f.borrowed;
            p.lent += f.lent;
        });
        return p;
    }

    /* The segments of a queue's bar, in order, in units of `res`: its use
     * within nominal ('used'), what of its nominal others use ('lent'), the
     * rest of its nominal ('unused'), what it borrows beyond it
     * ('borrowed') and what it may still borrow up to its borrowing limit
     * ('headroom'). Without a quota: its use only. */
    function bar(f) {
        if (f.nominal === null)
            return [{kind: 'used', value: f.used}];
        var within = Math.max(0, Math.min(f.nominal, f.used - f.borrowed));
        var lent = Math.max(0, Math.min(f.nominal - within, f.lent));
        var segs = [
            {kind: 'used', value: within},
            {kind: 'lent', value: lent},
            {kind: 'unused', value: Math.max(0, f.nominal - within - lent)},
            {kind: 'borrowed', value: f.borrowed}
        ];
        if (f.borrowingLimit !== null && f.borrowingLimit > f.borrowed)
            segs.push({kind: 'headroom', value: f.borrowingLimit - f.borrowed});
        return segs;
    }

    /* The length of a queue's bar: its nominal with all it may borrow (or
     * borrows, without a limit), or its use when that is more. */
    function extent(f) {
        if (f.nominal === null)
            return f.used;
        return Math.max(f.used, f.nominal + Math.max(f.borrowed, f.borrowingLimit || 0));
    }

    /* Who borrows from whom, in sentences, for `res`. The API reports each
     * queue's borrowed and lent amounts, not pairs: with one lender every
     * borrower borrows from it; with several, the sentence names them all
     * and says that the pairs are not known. */
    function flows(members, res) {
        var lenders = [], borrowers = [];
        members.forEach(function (m) {
            var f = figures(m, res);
            if (f.lent > EPS)
                lenders.push({name: m.q.name, v: f.lent});
            if (f.borrowed > EPS)
                borrowers.push({name: m.q.name, v: f.borrowed});
        });
        var desc = function (a, b) {
            return b.v - a.v || (a.name < b.name ? -1 : 1);
        };
        lenders.sort(desc);
        borrowers.sort(desc);
        var list = function (xs) {
            var parts = xs.map(function (x) {
                return x.name + ' (' + fmt(res, x.v) + ')';
            });
            return parts.length > 1 ? parts.slice(0, -1).join(', ') + ' and ' + parts[parts.length - 1] : parts[0];
        };
        if (!borrowers.length && !lenders.length)
            return ['No queue borrows or lends now.'];
        var out = [];
        if (!borrowers.length) {
            out.push(list(lenders) + (lenders.length > 1 ? ' lend' : ' lends') + ', but no queue of this cohort reports borrowing.');
            return out;
        }
        if (!lenders.length) {
            borrowers.forEach(function (b) {
                out.push(b.name + ' borrows ' + unit(res, b.v) + '; no queue of this cohort reports lending it.');
            });
            return out;
        }
        if (lenders.length === 1) {
            borrowers.forEach(function (b) {
                out.push(b.name + ' borrows ' + unit(res, b.v) + ', lent by ' + lenders[0].name + '.');
            });
            return out;
        }
        if (borrowers.length === 1) {
            out.push(borrowers[0].name + ' borrows ' + unit(res, borrowers[0].v) + ', from what ' + list(lenders) + ' lend.');
            return out;
        }
        borrowers.forEach(function (b) {
            out.push(b.name + ' borrows ' + unit(res, b.v) + '.');
        });
        out.push('They borrow from what ' + list(lenders) + ' lend; sluiced reports each queue\u2019s amounts, not who lends to whom.');
        return out;
    }

    return {RESOURCES: RESOURCES, POLL_MS: POLL_MS, resOf: resOf, amount: amount, fmt: fmt, unit: unit,
        groups: groups, figures: figures, pool: pool, bar: bar, extent: extent, flows: flows};
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;
        var V = QueuesView;
        var SEG_LABEL = {used: 'Used within nominal', lent: 'Lent to others', unused: 'Unused',
            borrowed: 'Borrowed beyond nominal', headroom: 'May still borrow'};

        /* A queue's figures in words, beside its bar. */
        function queueText(f, res) {
            if (f.nominal === null)
                return 'no quota; uses ' + V.fmt(res, f.used);
            var s = 'uses ' + V.fmt(res, f.used) + ' of ' + V.fmt(res, f.nominal);
            if (f.borrowed > 0)
                s += ', borrows ' + V.fmt(res, f.borrowed);
            if (f.lent > 0)
                s += ', lends ' + V.fmt(res, f.lent);
            if (f.borrowingLimit !== null)
                s += ' \u00b7 may borrow ' + V.fmt(res, f.borrowingLimit);
            if (f.lendingLimit !== null)
                s += f.lendingLimit > 0 ? ' \u00b7 lends at most ' + V.fmt(res, f.lendingLimit) : ' \u00b7 lends none of it';
            return s;
        }

        function segsOf(f, res) {
            return V.bar(f).map(function (s) {
                return {kind: s.kind, value: s.value, label: SEG_LABEL[s.kind], text: V.fmt(res, s.value)};
            });
        }

        /* The pool: one block per queue with a quota, as wide as its share
         * of the pool's nominal, split into used / lent / unused; its name
         * and figures are listed under it. */
        function poolBar(g, res, p) {
            var wrap = h('div', {class: 'pool'});
            var bar = h('div', {class: 'pool-bar', role: 'img', 'aria-label': 'Pool of cohort ' + g.name + ': ' +
                g.members.map(function (m) {
                    var f = V.figures(m, res);
                    return f.nominal === null ? null : m.q.name + ' nominal ' + V.fmt(res, f.nominal) + ', uses ' +
                        V.fmt(res, Math.max(0, f.used - f.borrowed)) + ' of it, lends ' + V.fmt(res, f.lent);
                }).filter(Boolean).join('; ')});
            var names = h('div', {class: 'pool-names', 'aria-hidden': 'true'});
            g.members.forEach(function (m) {
                var f = V.figures(m, res);
                if (f.nominal === null || !(f.nominal > 0))
                    return;
                var w = (f.nominal / p.nominal * 100).toFixed(3) + '%';
                var block = Viz.stack(segsOf(f, res).filter(function (s) {
                    return s.kind === 'used' || s.kind === 'lent' || s.kind === 'unused';
                }), f.nominal, {legend: false, label: m.q.name});
                block.removeAttribute('role');
                block.removeAttribute('aria-label');
                block.classList.add('pool-q');
                block.style.width = w;
                block.title = m.q.name + ': ' + queueText(f, res);
                bar.appendChild(block);
                var n = h('span', {class: 'pool-name'}, m.q.name);
                n.style.width = w;
                names.appendChild(n);
            });
            wrap.appendChild(bar);
            wrap.appendChild(names);
            return wrap;
        }

        function limitText(res, v, none) {
            return v === null ? none : V.fmt(res, v);
        }

        function modelQuotas(q) {
            var n = (q.nominal && q.nominal.gpusByModel) || {};
            var u = (q.used && q.used.gpusByModel) || {};
            var keys = Object.keys(n).sort();
            Object.keys(u).sort().forEach(function (k) {
                if (keys.indexOf(k) < 0)
                    keys.push(k);
            });
            if (!keys.length)
                return null;
            return keys.map(function (k) {
                return k + ' ' + Fmt.gpus(u[k] || 0) + (typeof n[k] === 'number' ? '/' + Fmt.gpus(n[k]) : '');
            }).join(', ');
        }

        function table(g, res) {
            var F = function (m) {
                return V.figures(m, res);
            };
            var cols = [
                {key: 'name', label: 'Queue', render: function (m) {
                    return h('strong', null, m.q.name);
                }},
                {key: 'team', label: 'Team', render: function (m) {
                    return m.q.team;
                }},
                {key: 'nominal', label: 'Nominal', num: true, render: function (m) {
                    return limitText(res, F(m).nominal, 'no quota');
                }},
                {key: 'used', label: 'Used', num: true, render: function (m) {
                    return V.fmt(res, F(m).used);
                }},
                {key: 'borrowed', label: 'Borrowed', num: true, render: function (m) {
                    return V.fmt(res, F(m).borrowed);
                }},
                {key: 'lent', label: 'Lent', num: true, render: function (m) {
                    return V.fmt(res, F(m).lent);
                }},
                {key: 'bl', label: 'Borrow limit', num: true, render: function (m) {
                    return g.name ? limitText(res, F(m).borrowingLimit, 'none') : 'no cohort';
                }},
                {key: 'll', label: 'Lend limit', num: true, render: function (m) {
                    return g.name ? limitText(res, F(m).lendingLimit, 'none') : 'no cohort';
                }},
                {key: 'ul', label: 'User limit', num: true, render: function (m) {
                    return limitText(res, F(m).userLimit, 'none');
                }},
                {key: 'opp', label: 'Opportunistic', num: true, render: function (m) {
                    return V.fmt(res, F(m).opportunistic);
                }},
                {key: 'models', label: 'GPUs by model', render: function (m) {
                    return modelQuotas(m.q);
                }},
                {key: 'pending', label: 'Pending', num: true, render: function (m) {
                    return Dom.link('/ui/jobs?queue=' + encodeURIComponent(m.q.name) + '&state=Pending', Fmt.int(m.q.pending || 0),
                        {'aria-label': Fmt.int(m.q.pending || 0) + ' pending jobs of queue ' + m.q.name});
                }},
                {key: 'running', label: 'Running', num: true, render: function (m) {
                    return Dom.link('/ui/jobs?queue=' + encodeURIComponent(m.q.name) + '&state=Running', Fmt.int(m.q.running || 0),
                        {'aria-label': Fmt.int(m.q.running || 0) + ' running jobs of queue ' + m.q.name});
                }},
                {key: 'share', label: 'Share / weight', num: true, render: function (m) {
                    return Fmt.num(m.q.share, 2) + ' / ' + (m.spec.weight === undefined ? '\u2014' : Fmt.num(m.spec.weight, 2));
                }}
            ];
            return Dom.table(cols.filter(function (c) {
                return c.key !== 'models' || res === 'gpus';
            }), g.members, {empty: 'No queues.'});
        }

        function group(g, res, idx) {
            var id = 'cohort-' + idx;
            var sec = h('section', {class: 'cohort', 'aria-labelledby': id});
            var resName = res === 'memory' ? 'memory' : res === 'cpus' ? 'CPUs' : 'GPUs';
            sec.appendChild(h('h2', {id: id}, g.name ? 'Cohort ' + g.name : 'Queues without a cohort'));
            if (g.description)
                sec.appendChild(h('p', {class: 'muted'}, g.description));
            if (g.name && !g.defined)
                sec.appendChild(h('p', {class: 'muted'}, 'No Cohort object of this name: its queues name it.'));
            if (!g.members.length) {
                sec.appendChild(h('p', null, 'No queue is in this cohort.'));
                return sec;
            }
            var p = V.pool(g.members, res);
            if (g.name) {
                sec.appendChild(h('p', {class: 'pool-sum'}, 'Pool of ' + resName + ': ',
                    h('strong', null, V.fmt(res, p.nominal)), ' nominal (the sum of its queues\u2019 quotas)' +
                    (p.open ? ', and ' + p.open + (p.open > 1 ? ' queues' : ' queue') + ' without a quota' : '') +
                    '; ', h('strong', null, V.fmt(res, p.used)), ' in use, ',
                    h('strong', null, V.fmt(res, p.borrowed)), ' borrowed, ',
                    h('strong', null, V.fmt(res, p.lent)), ' lent.'));
                if (p.nominal > 0)
                    sec.appendChild(poolBar(g, res, p));
            }
            /* one bar per queue, all on one scale */
            var scale = 0;
            g.members.forEach(function (m) {
                scale = Math.max(scale, V.extent(V.figures(m, res)));
            });
            var rows = h('div', {class: 'qbars'});
            if (scale > 0)
                sec.appendChild(h('h3', null, g.name ? 'Each queue, on one scale' : 'Each queue'));
            var kinds = Object.create(null);
            g.members.forEach(function (m) {
                var f = V.figures(m, res);
                var segs = segsOf(f, res);
                segs.forEach(function (s) {
                    if (s.value > 0)
                        kinds[s.kind] = true;
                });
                var bar = Viz.stack(segs, scale, {legend: false, label: m.q.name + ': ' + queueText(f, res)});
                if (f.nominal !== null && scale > 0) {
                    var mark = h('span', {class: 'nominal-mark', 'aria-hidden': 'true', title: 'nominal ' + V.fmt(res, f.nominal)});
                    mark.style.left = (f.nominal / scale * 100).toFixed(3) + '%';
                    bar.appendChild(mark);
                }
                rows.appendChild(h('div', {class: 'qbar-row'},
                    h('span', {class: 'qbar-name'}, m.q.name, m.q.team !== m.q.name ? h('small', {class: 'muted'}, ' team ' + m.q.team) : null),
                    bar,
                    h('span', {class: 'qbar-text'}, queueText(f, res))));
            });
            if (scale > 0)
                sec.appendChild(rows);
            var used = Object.keys(SEG_LABEL).filter(function (k) {
                return kinds[k];
            });
            if (used.length)
                sec.appendChild(Viz.legend(used.map(function (k) {
                    return {kind: k, label: SEG_LABEL[k], text: ''};
                }).concat([{kind: 'nominal', label: 'Nominal quota (the mark)', text: ''}])));
            if (g.name) {
                sec.appendChild(h('h3', null, 'Borrowing'));
                sec.appendChild(h('ul', {class: 'flows'}, V.flows(g.members, res).map(function (t) {
                    return h('li', null, t);
                })));
            }
            sec.appendChild(table(g, res));
            return sec;
        }

        App.page('/queues', {
            title: 'Queues and cohorts',
            render: function (ctx) {
                var res = V.resOf(ctx.query);
                var body = h('div', {class: 'queues-body'}, h('p', {class: 'muted'}, 'Loading\u2026'));
                var last = {text: null, data: null};
                var resButtons = h('div', {class: 'segmented', role: 'group', 'aria-label': 'Resource'},
                    V.RESOURCES.map(function (r) {
                        return h('button', {type: 'button', 'aria-pressed': r[0] === res ? 'true' : 'false', 'data-res': r[0],
                            onclick: function () {
                                if (r[0] === res)
                                    return;
                                res = r[0];
                                ctx.setQuery({res: res === 'gpus' ? null : res}, {push: true});
                                resButtons.querySelectorAll('button').forEach(function (b) {
                                    b.setAttribute('aria-pressed', b.getAttribute('data-res') === res ? 'true' : 'false');
                                });
                                draw();
                            }}, r[1]);
                    }));
                ctx.main.appendChild(h('div', {class: 'section-head'}, h('h1', null, 'Queues and cohorts'), resButtons));
                ctx.main.appendChild(h('p', {class: 'muted'}, 'A queue is guaranteed its nominal quota; queues of a cohort lend what they leave unused (up to their lending limit) and borrow what others lend (up to their borrowing limit). ',
                    'A borrower gives it back when the lender\u2019s jobs need it (docs/scheduler.md).'));
                ctx.main.appendChild(body);

                function draw() {
                    var d = last.data;
                    var frag = document.createDocumentFragment();
                    var gs = V.groups(d.queues, d.cohorts, d.specs);
                    if (!gs.length)
                        frag.appendChild(h('p', null, 'No queues.'));
                    gs.forEach(function (g, i) {
                        frag.appendChild(group(g, res, i));
                    });
                    d.notes.forEach(function (n) {
                        frag.appendChild(n);
                    });
                    /* the shares change at every refresh: the focus stays */
                    Viz.keepFocus(body, function () {
                        Dom.clear(body);
                        body.appendChild(frag);
                    });
                }

                function load() {
                    var soft = function (p) {
                        return p.then(function (x) {
                            return {ok: x};
                        }, function (e) {
                            return {err: e};
                        });
                    };
                    return Promise.all([Api.get('/v1/queues'), soft(Api.get('/v1/objects/cohort')),
                        soft(Api.get('/v1/objects/queue'))]).then(function (r) {
                        if (!ctx.alive())
                            return;
                        var text = JSON.stringify(r);
                        if (text === last.text)
                            return;
                        last.text = text;
                        var notes = [];
                        if (r[1].err)
                            notes.push(Dom.message(r[1].err));
                        if (r[2].err)
                            notes.push(Dom.message(r[2].err));
                        last.data = {queues: r[0].queues || [], cohorts: r[1].ok ? r[1].ok.items : [],
                            specs: r[2].ok ? r[2].ok.items : [], notes: notes};
                        draw();
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        last.text = null;
                        Dom.clear(body);
                        body.appendChild(Dom.message(e));
                    });
                }

                ctx.every(V.POLL_MS, load);
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = QueuesView;
