/*
 * 40-overview.js - the Overview page (/ui/, ?range=hour|day|week|month):
 * the cluster's GPUs now (allocated and in use, idle but allocated, free;
 * in total, by GPU model and by node), its running and pending jobs, and
 * over the chosen range the allocation, utilisation, pending jobs, wait
 * percentiles and preemptions of GET /v1/history.
 *
 * Now: GET /v1/nodes (each GPU's milli_allocated, jobs and NVML samples),
 * GET /v1/jobs?state=Running&limit=10000 (a running job's `idle` and
 * `placement`: which of its GPUs are idle but allocated) and GET /v1/queues
 * (pending and running per queue), asked again every 10 s with their ETags.
 * Over time: GET /v1/history?range=R, again every minute; a sluiced
 * without it (404) is said so on the page.
 *
 * Cluster (pure, shared with the Nodes page and loaded by node's test
 * runner): one GPU's state from the nodes and jobs answers, the breakdown
 * by model and node, node states. Viz: the stacked bar and its legend
 * that the Overview, Nodes and Queues pages draw, never by colour alone.
 * Overview (pure): the range of a URL, a series' figures, the charts of a
 * history answer.
 */
'use strict';

var Cluster = (function () {
    /* Running jobs by id. */
    function jobIndex(jobs) {
        var m = Object.create(null);
        for (var i = 0; jobs && i < jobs.length; i++)
            m[jobs[i].id] = jobs[i];
        return m;
    }

    /* The milli-GPUs job `job` holds of GPU `index` of node `node`, from its
     * placement (a job of several tasks may hold it in more than one);
     * null when its placement does not name that GPU. */
    function jobMilliOn(job, node, index) {
        var p = job.placement || [], s = 0, found = false;
        for (var i = 0; i < p.length; i++) {
            if (p[i].node !== node || !p[i].gpus)
                continue;
            for (var k = 0; k < p[i].gpus.length; k++) {
                if (p[i].gpus[k] === index) {
                    s += p[i].gpu_milli || 1000;
                    found = true;
                }
            }
        }
        return found ? s : null;
    }

    /* One GPU of a node now: its milli-GPUs allocated, and of them idle (held
     * by running jobs whose `idle` is set) and busy, free; its state 'free'
     * (nothing allocated), 'idle' (all it has allocated is idle) or
     * 'allocated'; its holders {id, job (the job object, or null when the
     * caller may not see it), milli, idle}. A holder the caller may not see
     * is counted busy: nothing says it is idle. */
    function gpuState(nodeName, gpu, jobsById) {
        var alloc = Math.max(0, Math.min(1000, gpu.milli_allocated || 0));
        var ids = gpu.jobs || [];
        var idle = 0, holders = [];
        for (var i = 0; i < ids.length; i++) {
            var j = jobsById ? jobsById[ids[i]] : undefined;
            var m = j ? jobMilliOn(j, nodeName, gpu.index) : null;
            if (m === null)
                m = Math.round(alloc / ids.length);
            var isIdle = !!(j && j.idle);
            if (isIdle)
                idle += m;
            holders.push({id: ids[i], job: j || null, milli: m, idle: isIdle});
        }
        idle = Math.min(idle, alloc);
        return {
            alloc: alloc, idle: idle, busy: alloc - idle, free: 1000 - alloc,
            state: alloc === 0 ? 'free' : idle >= alloc ? 'idle' : 'allocated',
            holders: holders
        };
    }

    /* Whether the GPU's figures come from this host's NVML samples. */
    function measured(gpu) {
        return typeof gpu.utilisation === 'number' || typeof gpu.mem_used_bytes === 'number' ||
            typeof gpu.power_w === 'number' || typeof gpu.temperature_c === 'number';
    }

    /* A node's state in one word for people: its admin's state when not
     * active (cordoned, draining, drained), else the executor's (up,
     * draining, down). */
    function nodeStatus(node) {
        var a = node.admin && node.admin.state && node.admin.state !== 'active' ? node.admin.state : null;
        if (node.state === 'down')
            return 'down';
        return a || node.state || 'up';
    }

    function zero() {
        return {gpus: 0, busy: 0, idle: 0, free: 0, utilN: 0, utilSum: 0, powerW: 0, powerN: 0};
    }

    function add(acc, st, gpu) {
        acc.gpus++;
        acc.busy += st.busy;
        acc.idle += st.idle;
        acc.free += st.free;
        if (typeof gpu.utilisation === 'number') {
            acc.utilN++;
            acc.utilSum += gpu.utilisation;
        }
        if (typeof gpu.power_w === 'number') {
            acc.powerN++;
            acc.powerW += gpu.power_w;
        }
    }

    /* The breakdown of a GET /v1/nodes answer's nodes, with the running
     * jobs by id: totals, per GPU model (by name) and per node (in the
     * answer's order), all amounts in milli-GPUs; `statuses` counts the
     * nodes by nodeStatus. One pass, plain loops: 8,000 GPUs take a few
     * milliseconds. */
    function breakdown(nodes, jobsById) {
        var total = zero(), byModel = Object.create(null), rows = [], statuses = Object.create(null);
        for (var n = 0; n < nodes.length; n++) {
            var node = nodes[n], gpus = node.gpus || [];
            var row = zero();
            row.name = node.name;
            row.status = nodeStatus(node);
            row.models = [];
            row.cpu = node.cpu_milli || 0;
            row.cpuAlloc = node.cpu_milli_allocated || 0;
            row.mem = node.mem_bytes || 0;
            row.memAlloc = node.mem_bytes_allocated || 0;
            statuses[row.status] = (statuses[row.status] || 0) + 1;
            for (var g = 0; g < gpus.length; g++) {
                var gpu = gpus[g];
                var st = gpuState(node.name, gpu, jobsById);
                var model = gpu.model || 'unknown';
                if (!byModel[model]) {
                    byModel[model] = zero();
                    byModel[model].model = model;
                }
                add(byModel[model], st, gpu);
                add(row, st, gpu);
                add(total, st, gpu);
                if (row.models.indexOf(model) < 0)
                    row.models.push(model);
            }
            rows.push(row);
        }
        var models = Object.keys(byModel).sort().map(function (k) {
            return byModel[k];
        });
        return {total: total, models: models, nodes: rows, statuses: statuses};
    }

    /* The n nodes to show first: the most idle-but-allocated GPUs, then
     * the most allocated, then by name. */
    function topNodes(rows, n) {
        return rows.slice().sort(function (a, b) {
            return b.idle - a.idle || (b.busy + b.idle) - (a.busy + a.idle) ||
                (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
        }).slice(0, n);
    }

    return {
        jobIndex: jobIndex, jobMilliOn: jobMilliOn, gpuState: gpuState, measured: measured,
        nodeStatus: nodeStatus, breakdown: breakdown, topNodes: topNodes
    };
})();

/* Stacked bars and their legends: each segment has a pattern class as well
 * as a colour, and the figures are written beside the bar. */
var Viz = (function () {
    /* segs: [{kind, value, label, text}] (kind: a CSS suffix of
     * .seg-KIND); total: the bar's whole (segments past it are cut).
     * opts: {label (the bar's accessible name), legend: false}. */
    function stack(segs, total, opts) {
        opts = opts || {};
        var h = Dom.h;
        var bar = h('div', {class: 'stack', role: 'img', 'aria-label': opts.label ||
            segs.map(function (s) {
                return s.label + ' ' + s.text;
            }).join(', ')});
        var left = 0;
        for (var i = 0; i < segs.length; i++) {
            var s = segs[i];
            if (!(s.value > 0) || !(total > 0))
                continue;
            var w = Math.max(0, Math.min(total - left, s.value)) / total * 100;
            left += s.value;
            if (w <= 0)
                continue;
            var el = h('span', {class: 'stack-seg seg-' + s.kind, title: s.label + ': ' + s.text});
            el.style.width = w.toFixed(3) + '%';
            bar.appendChild(el);
        }
        if (opts.legend === false)
            return bar;
        return h('div', {class: 'stack-box'}, bar, legend(segs));
    }

    function legend(segs) {
        var h = Dom.h;
        return h('ul', {class: 'legend'}, segs.map(function (s) {
            return h('li', null, h('span', {class: 'swatch seg-' + s.kind, 'aria-hidden': 'true'}),
                h('span', null, s.label + ' ', h('strong', null, s.text)));
        }));
    }

    /* The three parts of a count of GPUs (milli): in use, idle but
     * allocated, free, each "N (P %)". */
    function gpuSegs(acc) {
        var all = acc.busy + acc.idle + acc.free;
        function t(v) {
            return Fmt.milli(v) + (all > 0 ? ' (' + Fmt.pct(v / all, 0) + ')' : '');
        }
        return [
            {kind: 'busy', value: acc.busy, label: 'Allocated, in use', text: t(acc.busy)},
            {kind: 'idle', value: acc.idle, label: 'Idle but allocated', text: t(acc.idle)},
            {kind: 'free', value: acc.free, label: 'Free', text: t(acc.free)}
        ];
    }

    /* Run `rebuild` (which replaces what `box` holds) keeping the focus:
     * a link or button focused in `box` before is focused again after,
     * found by its href or its data-key. */
    function keepFocus(box, rebuild) {
        var ae = document.activeElement, sel = null;
        if (ae && ae !== box && box.contains(ae)) {
            if (ae.hasAttribute('data-key'))
                sel = '[data-key="' + CSS.escape(ae.getAttribute('data-key')) + '"]';
            else if (ae.tagName === 'A' && ae.hasAttribute('href'))
                sel = 'a[href="' + CSS.escape(ae.getAttribute('href')) + '"]';
        }
        rebuild();
        var again = sel ? box.querySelector(sel) : null;
        if (again)
            again.focus({preventScroll: true});
    }

    /* "1 node", "2 nodes", "1,000 GPUs" */
    function count(n, one, many) {
        return Fmt.int(n) + ' ' + (n === 1 ? one : many || one + 's');
    }

    return {stack: stack, legend: legend, gpuSegs: gpuSegs, keepFocus: keepFocus, count: count};
})();

var Overview = (function () {
    var RANGES = ['hour', 'day', 'week', 'month'];
    var RANGE_LABEL = {hour: 'Last hour', day: 'Last day', week: 'Last week', month: 'Last month'};
    var TOP_NODES = 10;
    var NOW_MS = 10000;
    var HISTORY_MS = 60000;

    /* The range a URL's query asks for: one of RANGES, default day. */
    function rangeOf(query) {
        var r = query && query.get ? query.get('range') : null;
        return RANGES.indexOf(r) >= 0 ? r : 'day';
    }

    /* A series' figures over its non-null values: {n, mean, max, min,
     * last (the last non-null), sum}; n 0 and the rest null when none. */
    function stats(values) {
        var n = 0, sum = 0, max = null, min = null, last = null;
        for (var i = 0; values && i < values.length; i++) {
            var v = values[i];
            if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v))
                continue;
            n++;
            sum += v;
            if (max === null || v > max)
                max = v;
            if (min === null || v < min)
                min = v;
            last = v;
        }
        return {n: n, sum: n ? sum : null, mean: n ? sum / n : null, max: max, min: min, last: last};
    }

    function dur(v) {
        return Fmt.duration(v);
    }

    /* The unit a chart of waits up to `maxSec` seconds draws in, so that
     * its axis ticks fall on round figures: seconds, minutes or hours. */
    function waitUnit(maxSec) {
        if (!(maxSec > 120))
            return {div: 1, name: 's'};
        if (maxSec <= 7200)
            return {div: 60, name: 'min'};
        return {div: 3600, name: 'h'};
    }

    function scaled(values, div) {
        return (values || []).map(function (v) {
            return v === null || v === undefined ? null : v / div;
        });
    }

    function count(v) {
        return Fmt.num(v, 1);
    }

    /* The y axis of a chart of counts: from 0 to at least 5, so that a
     * range of zeros or ones has whole ticks. */
    function countAxis(maxes) {
        var m = 0;
        for (var i = 0; i < maxes.length; i++)
            m = Math.max(m, maxes[i] || 0);
        return m < 5 ? {yfmt: count, ymax: 5} : {yfmt: count};
    }

    /* The charts of a GET /v1/history answer: [{key, title, data: {t,
     * series}, opts: {yfmt, ymax}, summary: text}], each with a summary in
     * words of what it draws (the chart's text equivalent). */
    function historyCharts(hist) {
        var s = hist.series || {};
        var t = s.t || [];
        var cap = hist.capacity_gpus;
        var capLine = t.map(function () {
            return typeof cap === 'number' ? cap : null;
        });
        var alloc = stats(s.gpus_allocated), idle = stats(s.gpus_idle), util = stats(s.utilisation);
        var pend = stats(s.pending), started = stats(s.started), pre = stats(s.preemptions);
        var p50 = stats(s.wait_p50_s), p90 = stats(s.wait_p90_s), p99 = stats(s.wait_p99_s);
        var wu = waitUnit(Math.max(p50.max || 0, p90.max || 0, p99.max || 0));
        var wfmt = function (v) {
            return dur(v * wu.div);
        };
        var mean1 = function (v) {
            return Fmt.num(v, 1);
        };
        var out = [];
        out.push({
            key: 'allocation', title: 'GPU allocation',
            data: {t: t, series: [
                {label: 'Capacity now', values: capLine, fmt: Fmt.gpus, colour: '--muted', dash: [2, 4], points: false},
                {label: 'Allocated', values: s.gpus_allocated || [], fmt: Fmt.gpus, colour: '--c1', dash: null},
                {label: 'Idle but allocated', values: s.gpus_idle || [], fmt: Fmt.gpus, colour: '--warn', dash: [6, 3]}]},
            opts: {yfmt: Fmt.gpus},
            summary: alloc.n ? 'Allocated: mean ' + mean1(alloc.mean) + ', peak ' + mean1(alloc.max) +
                (typeof cap === 'number' ? ' of ' + Fmt.int(cap) + ' GPUs now' : ' GPUs') +
                '; idle but allocated: mean ' + mean1(idle.mean) + ', peak ' + mean1(idle.max) + '.' :
                'No allocation recorded in this range.'
        });
        out.push({
            key: 'utilisation', title: 'GPU utilisation (measured)',
            data: {t: t, series: [{label: 'Utilisation', values: s.utilisation || [], fmt: Fmt.pct}]},
            opts: {yfmt: function (v) {
                return Fmt.pct(v, 0);
            }, ymax: 1},
            summary: util.n ? 'Mean ' + Fmt.pct(util.mean) + ', peak ' + Fmt.pct(util.max) +
                ', over the allocated GPUs NVML measured.' :
                'Not measured in this range: only GPUs NVML reads on sluiced\'s host are (fake and cluster GPUs are not).'
        });
        out.push({
            key: 'pending', title: 'Pending jobs and starts',
            data: {t: t, series: [
                {label: 'Pending', values: s.pending || [], fmt: count},
                {label: 'Started', values: s.started || [], fmt: count}]},
            opts: countAxis([pend.max, started.max]),
            summary: pend.n ? 'Pending: ' + Fmt.int(pend.last) + ' now, peak ' + Fmt.int(pend.max) +
                '; ' + Fmt.int(started.sum || 0) + ' starts in the range.' : 'No jobs in this range.'
        });
        out.push({
            key: 'waits', title: 'Wait before start (percentiles)',
            data: {t: t, series: [
                {label: 'p50', values: scaled(s.wait_p50_s, wu.div), fmt: wfmt},
                {label: 'p90', values: scaled(s.wait_p90_s, wu.div), fmt: wfmt},
                {label: 'p99', values: scaled(s.wait_p99_s, wu.div), fmt: wfmt}]},
            opts: {yfmt: function (v) {
                return Fmt.num(v, 1) + '\u00a0' + wu.name;
            }},
            summary: p50.n ? 'Of the jobs started in each step: p50 at most ' + dur(p50.max) +
                ', p90 at most ' + dur(p90.max) + ', p99 at most ' + dur(p99.max) + '.' :
                'No job started in this range.'
        });
        out.push({
            key: 'preemptions', title: 'Preemptions',
            data: {t: t, series: [{label: 'Preemptions', values: s.preemptions || [], fmt: count}]},
            opts: countAxis([pre.max]),
            summary: pre.n ? Fmt.int(pre.sum) + ' preemptions in the range, at most ' + Fmt.int(pre.max) +
                ' in one step.' : 'No preemptions in this range.'
        });
        return out;
    }

    return {RANGES: RANGES, RANGE_LABEL: RANGE_LABEL, TOP_NODES: TOP_NODES, NOW_MS: NOW_MS,
        HISTORY_MS: HISTORY_MS, rangeOf: rangeOf, stats: stats, waitUnit: waitUnit,
        historyCharts: historyCharts};
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;

        function card(label, value, sub, href) {
            return h('div', {class: 'card'},
                h('div', {class: 'label'}, href ? Dom.link(href, label) : label),
                h('div', {class: 'value'}, value),
                sub ? h('div', {class: 'sub'}, sub) : null);
        }

        function nodeBadges(row, node) {
            var out = [Dom.badge(node.state || 'up')];
            if (node.admin && node.admin.state && node.admin.state !== 'active')
                out.push(' ', Dom.badge(node.admin.state));
            return out;
        }

        /* The in use / idle / free columns of the model and node tables. */
        var GPU_COLS = [['busy', 'In use'], ['idle', 'Idle'], ['free', 'Free']].map(function (c) {
            return {key: c[0], label: c[1], num: true, render: function (r) {
                return Fmt.milli(r[c[0]]);
            }};
        });

        function measuredText(acc) {
            if (!acc.utilN && !acc.powerN)
                return 'not measured';
            var parts = [];
            if (acc.utilN)
                parts.push(Fmt.pct(acc.utilSum / acc.utilN, 0) + ' util (' + Fmt.int(acc.utilN) + ' GPUs)');
            if (acc.powerN)
                parts.push(Fmt.num(acc.powerW, 0) + '\u00a0W');
            return parts.join(', ');
        }

        function renderNow(box, nodes, jobs, queues, truncated) {
            var byId = Cluster.jobIndex(jobs);
            var b = Cluster.breakdown(nodes, byId);
            var t = b.total;
            var pending = 0, running = 0;
            queues.forEach(function (q) {
                pending += q.pending || 0;
                running += q.running || 0;
            });
            var top = nodes.length > TOP_N ? Cluster.topNodes(b.nodes, TOP_N) : b.nodes;
            /* built again only when what it shows changed: focus and
             * selection stay, and a refresh of 1,000 unchanged nodes costs
             * no DOM work */
            var nodeByName = Object.create(null);
            nodes.forEach(function (n) {
                nodeByName[n.name] = n;
            });
            var sig = JSON.stringify([t, b.models, b.statuses, top, pending, running, nodes.length, truncated,
                top.map(function (r) {
                    return [nodeByName[r.name].state, nodeByName[r.name].admin];
                })]);
            if (box.sluiceSig === sig)
                return;
            box.sluiceSig = sig;
            var gpuNodes = b.nodes.filter(function (r) {
                return r.gpus > 0;
            }).length;
            var statusText = Object.keys(b.statuses).sort().map(function (k) {
                return Fmt.int(b.statuses[k]) + ' ' + k;
            }).join(', ');
            var frag = document.createDocumentFragment();
            var all = t.busy + t.idle + t.free;
            frag.appendChild(h('div', {class: 'cards'},
                card('GPUs', Fmt.int(t.gpus), 'on ' + Fmt.int(gpuNodes) + ' of ' + Viz.count(nodes.length, 'node')),
                card('Allocated, in use', Fmt.milli(t.busy), all ? Fmt.pct(t.busy / all, 0) + ' of the GPUs' : null),
                card('Idle but allocated', Fmt.milli(t.idle), all ? Fmt.pct(t.idle / all, 0) + ' of the GPUs' : null),
                card('Free', Fmt.milli(t.free), all ? Fmt.pct(t.free / all, 0) + ' of the GPUs' : null),
                card('Running jobs', Fmt.int(running), null, '/ui/jobs?state=Running'),
                card('Pending jobs', Fmt.int(pending), null, '/ui/jobs?state=Pending'),
                card('Nodes', Fmt.int(nodes.length), statusText, '/ui/nodes')));
            if (all > 0)
                frag.appendChild(Viz.stack(Viz.gpuSegs(t), all, {label: 'GPUs now: ' + Viz.gpuSegs(t).map(function (s) {
                    return s.label + ' ' + s.text;
                }).join(', ')}));
            frag.appendChild(h('p', {class: 'muted'},
                t.utilN ? 'Measured now: ' + measuredText(t) + '. ' :
                    'No GPU is measured now (only GPUs NVML reads on sluiced\'s host are; fake and cluster GPUs are not): idle-but-allocated needs a measurement. ',
                truncated ? 'Idle flags are from the first 10,000 running jobs. ' : null));

            var models = Dom.table([
                {key: 'model', label: 'GPU model'},
                {key: 'gpus', label: 'GPUs', num: true, render: function (r) {
                    return Fmt.int(r.gpus);
                }}
            ].concat(GPU_COLS, [
                {key: 'bar', label: 'Share', render: function (r) {
                    return Viz.stack(Viz.gpuSegs(r), r.gpus * 1000, {legend: false});
                }},
                {key: 'util', label: 'Measured', render: measuredText}
            ]), b.models, {empty: 'No GPUs.'});

            var nodeTable = Dom.table([
                {key: 'name', label: 'Node', render: function (r) {
                    return Dom.link('/ui/nodes?q=' + encodeURIComponent(r.name), r.name);
                }},
                {key: 'state', label: 'State', render: function (r) {
                    return h('span', null, nodeBadges(r, nodeByName[r.name]));
                }},
                {key: 'models', label: 'GPUs', render: function (r) {
                    return r.gpus ? Fmt.int(r.gpus) + '\u00d7 ' + r.models.join(', ') : 'none';
                }}
            ].concat(GPU_COLS, [
                {key: 'cpu', label: 'CPUs', num: true, render: function (r) {
                    return Fmt.num(r.cpuAlloc / 1000, 1) + ' / ' + Fmt.num(r.cpu / 1000, 1);
                }},
                {key: 'mem', label: 'Memory', num: true, render: function (r) {
                    return Fmt.bytes(r.memAlloc) + ' / ' + Fmt.bytes(r.mem);
                }}
            ]), top, {
                caption: nodes.length > TOP_N ?
                    'The ' + TOP_N + ' of ' + Fmt.int(nodes.length) + ' nodes with the most idle-but-allocated, then allocated, GPUs' :
                    null,
                empty: 'No nodes.'
            });
            frag.appendChild(h('div', {class: 'panels now-panels'},
                h('div', {class: 'panel'}, h('h3', null, 'By GPU model'), models),
                h('div', {class: 'panel'}, h('h3', null, 'By node'), nodeTable,
                    h('p', null, Dom.link('/ui/nodes', nodes.length > TOP_N ?
                        'All ' + Fmt.int(nodes.length) + ' nodes and their GPUs' : 'Every GPU on the Nodes page')))));
            Viz.keepFocus(box, function () {
                Dom.clear(box);
                box.appendChild(frag);
            });
        }

        var TOP_N = Overview.TOP_NODES;

        App.page('/', {
            title: 'Overview',
            render: function (ctx) {
                var range = Overview.rangeOf(ctx.query);
                var nowBox = h('div', {class: 'now-box', 'aria-live': 'off'}, h('p', {class: 'muted'}, 'Loading\u2026'));
                var stamp = h('span', {class: 'muted stamp'});
                var histBox = h('div', {class: 'history-box'}, h('p', {class: 'muted'}, 'Loading\u2026'));
                var histNote = h('p', {class: 'muted'});
                var charts = [];
                var etags = {nodes: null, jobs: null, queues: null};
                var last = {nodes: null, jobs: null, queues: null, truncated: false};

                var rangeButtons = h('div', {class: 'segmented', role: 'group', 'aria-label': 'Range'},
                    Overview.RANGES.map(function (r) {
                        return h('button', {type: 'button', 'aria-pressed': r === range ? 'true' : 'false',
                            'data-range': r, onclick: function () {
                                if (r === range)
                                    return;
                                range = r;
                                ctx.setQuery({range: r === 'day' ? null : r}, {push: true});
                                rangeButtons.querySelectorAll('button').forEach(function (b) {
                                    b.setAttribute('aria-pressed', b.getAttribute('data-range') === r ? 'true' : 'false');
                                });
                                loadHistory();
                            }}, Overview.RANGE_LABEL[r]);
                    }));

                ctx.main.appendChild(h('h1', null, 'Overview'));
                ctx.main.appendChild(h('section', {'aria-labelledby': 'ov-now'},
                    h('div', {class: 'section-head'}, h('h2', {id: 'ov-now'}, 'Now'), stamp),
                    nowBox));
                ctx.main.appendChild(h('section', {'aria-labelledby': 'ov-hist'},
                    h('div', {class: 'section-head'}, h('h2', {id: 'ov-hist'}, 'Over time'), rangeButtons),
                    histNote, histBox));

                function destroyCharts() {
                    charts.forEach(function (c) {
                        c.destroy();
                    });
                    charts = [];
                }
                ctx.onCleanup(destroyCharts);

                /* The figures of now: three reads, each skipped by its ETag
                 * when unchanged; the section is built again only when one
                 * of them changed. */
                function loadNow() {
                    return Promise.all([
                        Api.get('/v1/nodes', null, {etag: etags.nodes || ''}),
                        Api.get('/v1/jobs', {state: 'Running', limit: 10000}, {etag: etags.jobs || ''}),
                        Api.get('/v1/queues', null, {etag: etags.queues || ''})
                    ]).then(function (r) {
                        if (!ctx.alive())
                            return;
                        var changed = false;
                        if (!r[0].notModified) {
                            last.nodes = r[0].nodes || [];
                            etags.nodes = r[0]._etag;
                            changed = true;
                        }
                        if (!r[1].notModified) {
                            last.jobs = r[1].jobs || [];
                            last.truncated = r[1].next !== null && r[1].next !== undefined;
                            etags.jobs = r[1]._etag;
                            changed = true;
                        }
                        if (!r[2].notModified) {
                            last.queues = r[2].queues || [];
                            etags.queues = r[2]._etag;
                            changed = true;
                        }
                        stamp.textContent = 'as of ' + Fmt.time(Date.now()).slice(11) + ', every ' + (Overview.NOW_MS / 1000) + ' s';
                        if (changed)
                            renderNow(nowBox, last.nodes, last.jobs, last.queues, last.truncated);
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(nowBox);
                        nowBox.appendChild(Dom.message(e));
                    });
                }

                var histSeq = 0;
                function loadHistory() {
                    var mine = ++histSeq, want = range;
                    histBox.setAttribute('aria-busy', 'true');
                    return Api.get('/v1/history', {range: want}).then(function (hist) {
                        if (!ctx.alive() || mine !== histSeq)
                            return;
                        destroyCharts();
                        Dom.clear(histBox);
                        var step = hist.step ? Fmt.duration(hist.step / 1000) : '?';
                        histNote.textContent = Overview.RANGE_LABEL[want] + ': ' + Fmt.time(hist.from) + ' to ' +
                            Fmt.time(hist.to) + ', in steps of ' + step +
                            (hist.team ? ', team ' + hist.team + ' only' : ', all teams') +
                            '. From the store: it survives a restart of sluiced.';
                        var grid = h('div', {class: 'panels charts'});
                        histBox.appendChild(grid);
                        Overview.historyCharts(hist).forEach(function (c) {
                            var el = h('div', {class: 'chart'});
                            grid.appendChild(h('figure', {class: 'panel chart-panel', 'aria-labelledby': 'ch-' + c.key},
                                h('h3', {id: 'ch-' + c.key}, c.title), el,
                                h('figcaption', {class: 'muted'}, c.summary)));
                            charts.push({el: el, c: c});
                        });
                        /* drawn once laid out, so that each knows its width */
                        charts = charts.map(function (x) {
                            return Dom.chart(x.el, x.c.data, x.c.opts);
                        });
                    }, function (e) {
                        if (!ctx.alive() || mine !== histSeq)
                            return;
                        destroyCharts();
                        Dom.clear(histBox);
                        histNote.textContent = '';
                        histBox.appendChild(e.status === 404 ?
                            Dom.message('History not available from this sluiced (GET /v1/history: ' + e.message +
                                '): a newer sluiced has it.', 'info') :
                            Dom.message(e));
                    }).then(function () {
                        histBox.setAttribute('aria-busy', 'false');
                    });
                }

                ctx.every(Overview.NOW_MS, loadNow);
                ctx.every(Overview.HISTORY_MS, loadHistory);
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = {Cluster: Cluster, Overview: Overview};
