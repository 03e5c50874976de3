/*
 * 41-nodes.js - the Nodes page (/ui/nodes, ?model=&state=&node=&q=): one
 * row per node (its state and admin state with the reason, CPUs and
 * memory allocated) and in it one tile per GPU: model, the jobs holding it
 * (links to /ui/jobs/ID) and their team, free / allocated / idle in words
 * and by a pattern, and utilisation, memory, power and temperature where
 * NVML measures them ("not measured" where not: fake and cluster GPUs).
 * Admins get cordon, drain and uncordon per node.
 *
 * Reads GET /v1/nodes and GET /v1/jobs?state=Running&limit=10000 (holders'
 * teams and idle flags), again every 10 s with their ETags; only the rows
 * of nodes that changed are built again. 1,000 nodes x 8 GPUs are built
 * in batches, one per animation frame, so the page never freezes; rows off
 * the screen are skipped by the browser's layout (content-visibility) and
 * a filter only hides and shows what is built.
 * Changes: POST /v1/nodes/NAME/cordon|uncordon|drain {"reason"}.
 *
 * NodesView (pure, loaded by node's test runner): the filters of a URL, a
 * node's and a GPU's match, a GPU's measurement in words, a row's change
 * signature.
 */
'use strict';

var NodesView = (function () {
    var GPU_STATES = [['', 'Any'], ['free', 'Free'], ['allocated', 'Allocated, in use'], ['idle', 'Idle but allocated']];
    var NODE_STATES = [['', 'Any'], ['up', 'Up'], ['cordoned', 'Cordoned'], ['draining', 'Draining'],
        ['drained', 'Drained'], ['down', 'Down']];
    var BATCH = 25;
    var POLL_MS = 10000;

    function valid(list, v) {
        for (var i = 0; i < list.length; i++)
            if (list[i][0] === v)
                return v;
        return '';
    }

    /* The filters of a URL's query: {model, state, node, q}, '' for none. */
    function filtersOf(query) {
        var g = function (k) {
            return (query && query.get && query.get(k)) || '';
        };
        return {model: g('model'), state: valid(GPU_STATES, g('state')), node: valid(NODE_STATES, g('node')),
            q: g('q').trim()};
    }

    /* Whether GPU `gpu` (with its state `st` from Cluster.gpuState) is one
     * the filters ask for. */
    function gpuMatches(gpu, st, f) {
        return (!f.model || gpu.model === f.model) && (!f.state || st.state === f.state);
    }

    /* Whether node `node` is shown: its name holds the text (any case),
     * its state is the one asked, and, with a GPU filter, one of its GPUs
     * matches it (sts: its GPUs' states, in order). */
    function nodeMatches(node, sts, f) {
        if (f.q && node.name.toLowerCase().indexOf(f.q.toLowerCase()) < 0)
            return false;
        if (f.node && Cluster.nodeStatus(node) !== f.node)
            return false;
        if (!f.model && !f.state)
            return true;
        var gpus = node.gpus || [];
        for (var i = 0; i < gpus.length; i++)
            if (gpuMatches(gpus[i], sts[i], f))
                return true;
        return false;
    }

    /* A GPU's measurement in words: {measured, text, title}. Only GPUs
     * NVML reads on sluiced's host are measured; for the others the words
     * say so, and that their energy is estimated. */
    function measurement(node, gpu) {
        if (!Cluster.measured(gpu)) {
            var src = node.gpu_source || 'fake';
            return {measured: false, text: 'not measured',
                title: (src === 'nvml' ? 'no NVML sample yet' : src + ' GPU: utilisation, memory, power and temperature are not measured') +
                    '; its energy is estimated from its model\'s power'};
        }
        var parts = [];
        parts.push(typeof gpu.utilisation === 'number' ? Fmt.pct(gpu.utilisation, 0) : 'util \u2014');
        if (typeof gpu.mem_used_bytes === 'number')
            parts.push(Fmt.bytes(gpu.mem_used_bytes) + (gpu.mem_bytes ? '/' + Fmt.bytes(gpu.mem_bytes) : ''));
        if (typeof gpu.power_w === 'number')
            parts.push(Fmt.num(gpu.power_w, 0) + '\u00a0W');
        if (typeof gpu.temperature_c === 'number')
            parts.push(Fmt.num(gpu.temperature_c, 0) + '\u00a0\u00b0C');
        return {measured: true, text: parts.join(' \u00b7 '),
            title: 'measured by NVML: utilisation, memory used, power, temperature'};
    }

    /* The state of a GPU in words: "free", "allocated", "idle", with the
     * amount when only part of the GPU is: "0.5 allocated, 0.5 free". */
    function stateWords(st) {
        if (st.state === 'free')
            return 'free';
        var w = [];
        if (st.busy)
            w.push((st.busy < 1000 ? Fmt.milli(st.busy) + ' ' : '') + 'allocated');
        if (st.idle)
            w.push((st.idle < 1000 ? Fmt.milli(st.idle) + ' ' : '') + 'idle');
        if (st.free)
            w.push(Fmt.milli(st.free) + ' free');
        return w.join(', ');
    }

    /* What a node's row shows, as one string: a row is built again only
     * when it changes. */
    function signature(node, sts) {
        var s = JSON.stringify(node);
        for (var i = 0; i < sts.length; i++) {
            var hs = sts[i].holders;
            for (var k = 0; k < hs.length; k++)
                s += '|' + hs[k].id + ':' + (hs[k].job ? hs[k].job.team + ':' + hs[k].job.name : '') + ':' + hs[k].idle;
        }
        return s;
    }

    return {GPU_STATES: GPU_STATES, NODE_STATES: NODE_STATES, BATCH: BATCH, POLL_MS: POLL_MS,
        filtersOf: filtersOf, gpuMatches: gpuMatches, nodeMatches: nodeMatches,
        measurement: measurement, stateWords: stateWords, signature: signature};
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;

        function tile(node, gpu, st) {
            var m = NodesView.measurement(node, gpu);
            var jobs = null;
            if (st.holders.length) {
                jobs = h('div', {class: 't-jobs'});
                st.holders.forEach(function (x, i) {
                    if (i)
                        jobs.appendChild(document.createTextNode(', '));
                    jobs.appendChild(Dom.link('/ui/jobs/' + x.id, (x.job ? x.job.name || '#' + x.id : 'job ' + x.id),
                        {title: 'job ' + x.id + (x.job ? ' of ' + x.job.user + ', team ' + x.job.team : '')}));
                    if (x.job)
                        jobs.appendChild(document.createTextNode(' \u00b7 ' + x.job.team + (x.idle ? ' (idle)' : '')));
                });
            }
            return h('li', {class: 'tile tile-' + st.state},
                h('div', {class: 't-head'}, h('strong', null, 'GPU ' + gpu.index), ' ' + (gpu.model || '')),
                h('div', {class: 't-state'}, NodesView.stateWords(st)),
                jobs,
                h('div', {class: 't-meas' + (m.measured ? '' : ' muted'), title: m.title}, m.text));
        }

        function nodeRow(node, sts, admin, onAdmin) {
            var gpus = node.gpus || [];
            var a = node.admin || {};
            var acc = {busy: 0, idle: 0, free: 0};
            sts.forEach(function (st) {
                acc.busy += st.busy;
                acc.idle += st.idle;
                acc.free += st.free;
            });
            var models = [];
            gpus.forEach(function (g) {
                if (models.indexOf(g.model) < 0)
                    models.push(g.model);
            });
            var facts = [];
            if (node.domain)
                facts.push('domain ' + node.domain);
            facts.push(gpus.length ? gpus.length + ' \u00d7 ' + models.join(', ') + ' (' + (node.gpu_source || 'fake') + ')' : 'no GPUs');
            if (gpus.length)
                facts.push(Fmt.milli(acc.busy) + ' in use, ' + Fmt.milli(acc.idle) + ' idle, ' + Fmt.milli(acc.free) + ' free');
            var reasons = [];
            if (node.reason)
                reasons.push(h('span', null, node.state + ': ' + node.reason));
            if (a.state && a.state !== 'active')
                reasons.push(h('span', null, a.state + (a.reason ? ': \u201c' + a.reason + '\u201d' : '') +
                    (a.by ? ' by ' + a.by : '') + (a.at ? ', ' + Fmt.time(Fmt.ms(a.at)) : '')));
            var actions = null;
            if (admin) {
                var cordoned = a.state && a.state !== 'active';
                actions = h('div', {class: 'node-actions'},
                    cordoned ? null : h('button', {type: 'button', 'data-key': node.name + '/cordon',
                        onclick: function () {
                            onAdmin(node, 'cordon');
                        }}, 'Cordon'),
                    a.state === 'drained' || a.state === 'draining' ? null : h('button', {type: 'button', class: 'danger',
                        'data-key': node.name + '/drain', onclick: function () {
                            onAdmin(node, 'drain');
                        }}, 'Drain'),
                    cordoned ? h('button', {type: 'button', 'data-key': node.name + '/uncordon',
                        onclick: function () {
                            onAdmin(node, 'uncordon');
                        }}, 'Uncordon') : null);
            }
            var ul = h('ul', {class: 'tiles', 'aria-label': 'GPUs of ' + node.name});
            for (var i = 0; i < gpus.length; i++)
                ul.appendChild(tile(node, gpus[i], sts[i]));
            return h('article', {class: 'node', 'aria-labelledby': 'node-' + node.name, 'data-node': node.name},
                h('div', {class: 'node-head'},
                    h('h2', {id: 'node-' + node.name}, node.name),
                    h('span', {class: 'node-badges'}, Dom.badge(node.state || 'up'),
                        a.state && a.state !== 'active' ? [' ', Dom.badge(a.state)] : null),
                    h('span', {class: 'node-facts muted'}, facts.join(' \u00b7 ')),
                    actions),
                reasons.length ? h('p', {class: 'node-reason'}, reasons.map(function (r, i) {
                    return i ? [' \u00b7 ', r] : r;
                })) : null,
                h('div', {class: 'node-res'},
                    Dom.meter(node.cpu_milli_allocated || 0, node.cpu_milli || 0,
                        Fmt.num((node.cpu_milli_allocated || 0) / 1000, 1) + ' / ' + Fmt.num((node.cpu_milli || 0) / 1000, 1) + ' CPUs',
                        {label: 'CPUs allocated on ' + node.name}),
                    Dom.meter(node.mem_bytes_allocated || 0, node.mem_bytes || 0,
                        Fmt.bytes(node.mem_bytes_allocated || 0) + ' / ' + Fmt.bytes(node.mem_bytes || 0) + ' memory',
                        {label: 'memory allocated on ' + node.name})),
                gpus.length ? ul : null);
        }

        /* After a row is built again: focus its button of the same key,
         * else the one that undoes it (cordon became uncordon), else its
         * first button, else its name. */
        var COUNTERPART = {cordon: 'uncordon', drain: 'uncordon', uncordon: 'cordon'};

        function refocus(el, key) {
            var name = el.getAttribute('data-node'), action = key ? key.slice(name.length + 1) : '';
            var again = (key && el.querySelector('[data-key="' + CSS.escape(key) + '"]')) ||
                (COUNTERPART[action] && el.querySelector('[data-key="' + CSS.escape(name + '/' + COUNTERPART[action]) + '"]')) ||
                el.querySelector('.node-actions button');
            if (!again) {
                again = el.querySelector('h2');
                again.setAttribute('tabindex', '-1');
            }
            again.focus();
        }

        App.page('/nodes', {
            title: 'Nodes',
            render: function (ctx) {
                var f = NodesView.filtersOf(ctx.query);
                var admin = ctx.can('admin');
                var rows = Object.create(null); /* name -> {el, sig, node, sts} */
                var order = [];
                var etags = {nodes: '', jobs: ''};
                var data = {nodes: null, jobs: null, truncated: false};
                var summary = h('div', {class: 'nodes-summary'}, h('p', {class: 'muted'}, 'Loading\u2026'));
                var countEl = h('p', {class: 'muted', 'aria-live': 'polite'});
                var list = h('div', {class: 'node-list'});
                var dialog = adminDialog();

                var modelSel = Dom.field({label: 'GPU model', name: 'model', options: [['', 'Any']], value: f.model});
                var stateSel = Dom.field({label: 'GPU state', name: 'state', options: NodesView.GPU_STATES, value: f.state});
                var nodeSel = Dom.field({label: 'Node state', name: 'node', options: NodesView.NODE_STATES, value: f.node});
                var search = Dom.field({label: 'Node name', name: 'q', type: 'search', value: f.q,
                    placeholder: 'gpu-01', attrs: {autocomplete: 'off', spellcheck: 'false'}});
                var form = h('form', {class: 'filters node-filters', role: 'search', 'aria-label': 'Filter nodes'},
                    modelSel, stateSel, nodeSel, search);
                form.addEventListener('submit', function (ev) {
                    ev.preventDefault();
                });
                var typing = null;
                form.addEventListener('input', function (ev) {
                    clearTimeout(typing);
                    typing = setTimeout(filterChanged, ev.target.name === 'q' ? 150 : 0);
                });
                ctx.onCleanup(function () {
                    clearTimeout(typing);
                    if (dialog.el.open)
                        dialog.el.close();
                    dialog.el.remove();
                });

                ctx.main.appendChild(h('h1', null, 'Nodes'));
                ctx.main.appendChild(summary);
                ctx.main.appendChild(form);
                ctx.main.appendChild(countEl);
                ctx.main.appendChild(list);
                document.body.appendChild(dialog.el);

                function filterChanged() {
                    var el = form.elements;
                    f = {model: el.model.value, state: el.state.value, node: el.node.value, q: el.q.value.trim()};
                    ctx.setQuery({model: f.model, state: f.state, node: f.node, q: f.q});
                    applyFilters();
                }

                /* Shows and hides the rows built so far; dims the tiles a
                 * GPU filter leaves out. */
                function applyFilters() {
                    var shown = 0, gpuFilter = !!(f.model || f.state);
                    for (var i = 0; i < order.length; i++) {
                        var r = rows[order[i]];
                        if (!r || !r.el)
                            continue;
                        var show = NodesView.nodeMatches(r.node, r.sts, f);
                        r.el.hidden = !show;
                        if (show)
                            shown++;
                        if ((show && gpuFilter) || r.dimmed) {
                            var tiles = r.el.querySelectorAll('.tile');
                            for (var k = 0; k < tiles.length; k++)
                                tiles[k].classList.toggle('dim', gpuFilter && !NodesView.gpuMatches(r.node.gpus[k], r.sts[k], f));
                            r.dimmed = gpuFilter;
                        }
                    }
                    countEl.textContent = 'Showing ' + Fmt.int(shown) + ' of ' + Viz.count(order.length, 'node') +
                        (f.model || f.state ? ' with a matching GPU (the others dimmed)' : '') + '.';
                }

                function renderSummary(b) {
                    Dom.clear(summary);
                    var t = b.total, all = t.busy + t.idle + t.free;
                    summary.appendChild(h('p', null, Viz.count(data.nodes.length, 'node') + ', ' + Viz.count(t.gpus, 'GPU') + '. ' +
                        Object.keys(b.statuses).sort().map(function (k) {
                            return Fmt.int(b.statuses[k]) + ' ' + k;
                        }).join(', ') + '.' + (data.truncated ? ' Holders\u2019 teams and idle flags are from the first 10,000 running jobs.' : '')));
                    if (all > 0)
                        summary.appendChild(Viz.stack(Viz.gpuSegs(t), all));
                    /* the model filter offers the models there are */
                    var sel = form.elements.model, want = f.model;
                    var models = b.models.map(function (m) {
                        return m.model;
                    });
                    var have = Array.prototype.map.call(sel.options, function (o) {
                        return o.value;
                    }).slice(1);
                    if (have.join('\n') !== models.join('\n')) {
                        Dom.clear(sel);
                        sel.appendChild(h('option', {value: ''}, 'Any'));
                        models.forEach(function (m) {
                            sel.appendChild(h('option', {value: m, selected: m === want}, m));
                        });
                        if (want && models.indexOf(want) < 0)
                            sel.appendChild(h('option', {value: want, selected: true}, want + ' (none)'));
                    }
                }

                /* Builds the rows that changed, BATCH nodes per animation
                 * frame; resolves once all are in. */
                function renderRows() {
                    var byId = Cluster.jobIndex(data.jobs);
                    var nodes = data.nodes;
                    var seen = Object.create(null);
                    var work = [];
                    order = nodes.map(function (n) {
                        return n.name;
                    });
                    for (var i = 0; i < nodes.length; i++) {
                        var node = nodes[i];
                        var sts = (node.gpus || []).map(function (g) {
                            return Cluster.gpuState(node.name, g, byId);
                        });
                        var sig = NodesView.signature(node, sts);
                        seen[node.name] = true;
                        var r = rows[node.name];
                        if (r && r.sig === sig) {
                            r.node = node;
                            r.sts = sts;
                            continue;
                        }
                        work.push({i: i, node: node, sts: sts, sig: sig});
                    }
                    Object.keys(rows).forEach(function (name) {
                        if (!seen[name]) {
                            if (rows[name].el)
                                rows[name].el.remove();
                            delete rows[name];
                        }
                    });
                    return new Promise(function (resolve) {
                        var k = 0;
                        function batch() {
                            if (!ctx.alive())
                                return resolve();
                            var frag = null, end = Math.min(work.length, k + NodesView.BATCH);
                            for (; k < end; k++) {
                                var w = work[k];
                                var el = nodeRow(w.node, w.sts, admin, openDialog);
                                var old = rows[w.node.name];
                                el.hidden = !NodesView.nodeMatches(w.node, w.sts, f);
                                if (old && old.el) {
                                    var focusKey = old.el.contains(document.activeElement) ?
                                        (document.activeElement.getAttribute('data-key') || '') : null;
                                    list.replaceChild(el, old.el);
                                    if (focusKey !== null)
                                        refocus(el, focusKey);
                                } else {
                                    /* new rows come in the answer's order: at the end */
                                    frag = frag || document.createDocumentFragment();
                                    frag.appendChild(el);
                                }
                                rows[w.node.name] = {el: el, sig: w.sig, node: w.node, sts: w.sts, dimmed: false};
                            }
                            if (frag)
                                list.appendChild(frag);
                            if (k < work.length) {
                                requestAnimationFrame(batch);
                            } else {
                                applyFilters();
                                resolve();
                            }
                        }
                        batch();
                    });
                }

                function load() {
                    return Promise.all([
                        Api.get('/v1/nodes', null, {etag: etags.nodes}),
                        Api.get('/v1/jobs', {state: 'Running', limit: 10000}, {etag: etags.jobs})
                    ]).then(function (r) {
                        if (!ctx.alive())
                            return null;
                        if (r[0].notModified && r[1].notModified && data.nodes)
                            return null;
                        if (!r[0].notModified) {
                            data.nodes = r[0].nodes || [];
                            etags.nodes = r[0]._etag || '';
                        }
                        if (!r[1].notModified) {
                            data.jobs = r[1].jobs || [];
                            data.truncated = r[1].next !== null && r[1].next !== undefined;
                            etags.jobs = r[1]._etag || '';
                        }
                        renderSummary(Cluster.breakdown(data.nodes, Cluster.jobIndex(data.jobs)));
                        if (!data.nodes.length) {
                            countEl.textContent = 'sluiced lists no nodes.';
                            return null;
                        }
                        return renderRows();
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(summary);
                        summary.appendChild(Dom.message(e));
                    });
                }

                /* The cordon / drain / uncordon dialog (admins). */
                function adminDialog() {
                    var title = h('h2', {id: 'node-dialog-title'});
                    var what = h('p');
                    var err = h('div');
                    var reason = Dom.field({label: 'Reason (optional)', name: 'reason', hint: 'Kept with the node\u2019s state and in the audit log; at most 256 bytes.',
                        attrs: {maxlength: 256, autocomplete: 'off'}});
                    var ok = h('button', {type: 'submit', class: 'primary'}, 'OK');
                    var cancel = h('button', {type: 'button'}, 'Cancel');
                    var form2 = h('form', {method: 'dialog'}, title, what, reason, err,
                        h('div', {class: 'toolbar'}, ok, cancel));
                    var el = h('dialog', {class: 'node-dialog', 'aria-labelledby': 'node-dialog-title'}, form2);
                    var state = {node: null, action: null, opener: null};
                    cancel.addEventListener('click', function () {
                        el.close();
                    });
                    el.addEventListener('close', function () {
                        if (state.opener && document.contains(state.opener))
                            state.opener.focus();
                    });
                    form2.addEventListener('submit', function (ev) {
                        ev.preventDefault();
                        var name = state.node.name, action = state.action;
                        ok.disabled = true;
                        Api.post('/v1/nodes/' + encodeURIComponent(name) + '/' + action,
                            {reason: form2.elements.reason.value.trim()}).then(function (res) {
                            el.close();
                            Dom.toast(name + ': ' + (res.changed === false ? 'already ' + res.state : res.state) + '.');
                            etags.nodes = '';
                            return ctx.alive() ? load() : null;
                        }, function (e) {
                            Dom.fieldErrors(form2, e, function (fld) {
                                return fld === 'reason' ? 'reason' : null;
                            }, err);
                        }).then(function () {
                            ok.disabled = false;
                        });
                    });
                    var WORDS = {
                        cordon: ['Cordon', 'It takes no new work; what runs there goes on.'],
                        drain: ['Drain', 'It takes no new work, and its running jobs finish (they are not stopped).'],
                        uncordon: ['Uncordon', 'It takes new work again, when its executor has it up.']
                    };
                    return {
                        el: el,
                        open: function (node, action, opener) {
                            state = {node: node, action: action, opener: opener};
                            title.textContent = WORDS[action][0] + ' ' + node.name;
                            what.textContent = WORDS[action][1];
                            ok.textContent = WORDS[action][0];
                            ok.className = action === 'drain' ? 'danger' : 'primary';
                            form2.elements.reason.value = '';
                            Dom.fieldErrors(form2, null, null, err);
                            el.showModal();
                            form2.elements.reason.focus();
                        }
                    };
                }

                function openDialog(node, action) {
                    dialog.open(node, action, document.activeElement);
                }

                ctx.every(NodesView.POLL_MS, load);
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = NodesView;
