/*
 * 48-models.js - the Models pages: the registry (/ui/models?name=&stage=,
 * GET /v1/models) with each version's stage and its history, and a
 * model's page (/ui/models/NAME@VERSION: GET /v1/models/{ref}, the other
 * versions of its name, and GET /v1/lineage/model:NAME@VERSION) with its
 * metrics, stage history, a stage change (POST /v1/models/{ref}/stage;
 * the API decides who may, its refusals are shown under the field they
 * name) and the lineage model <- job <- image, code, datasets, drawn as
 * SVG (document.createElementNS, no markup parsed) whose nodes with a page
 * are links, and written out beside it as a list, so that nothing
 * depends on seeing the drawing.
 *
 * ModelLineage (pure, loaded by node's test runner too): the lineage's
 * graph, its layout left to right or top down, text fitting, stages.
 */
'use strict';

var ModelLineage = (function () {
    var F = typeof Fmt !== 'undefined' ? Fmt : require('./00-format.js');

    var STAGES = ['none', 'staging', 'production', 'archived'];

    /* "resnet@1.0" -> {name, version}; null when it is not NAME@VERSION. */
    function parseRef(ref) {
        var m = /^([^@\s/]+)@([^@\s/]+)$/.exec(ref || '');
        return m ? {name: m[1], version: m[2]} : null;
    }

    /* A model's page: /ui/models/NAME@VERSION (sluiced answers every path
     * deeper than /ui/NAME with the dashboard, dots and all). */
    function refHref(ref) {
        return '/ui/models/' + encodeURIComponent(ref).replace(/%40/g, '@');
    }

    function modelHref(m) {
        return refHref(m.name + '@' + m.version);
    }

    /* Only http(s) addresses become links: a repository's URL is data. */
    function safeUrl(u) {
        return /^https?:\/\/[^\s]+$/i.test(u || '') ? u : null;
    }

    function shortDigest(d) {
        if (!d)
            return '';
        var m = /^(sha256:)([0-9a-f]{12})[0-9a-f]*$/.exec(d);
        return m ? m[1] + m[2] + '\u2026' : d;
    }

    /* The stages a model may be moved to from `current`: every other one;
     * none from archived (an archived version stays archived). */
    function nextStages(current) {
        if (current === 'archived')
            return [];
        return STAGES.filter(function (s) {
            return s !== current;
        });
    }

    /* Versions in a natural order: "1.10" after "1.9". */
    function compareVersions(a, b) {
        var x = String(a).split(/([0-9]+)/), y = String(b).split(/([0-9]+)/);
        for (var i = 0; i < Math.max(x.length, y.length); i++) {
            var p = x[i] === undefined ? '' : x[i], q = y[i] === undefined ? '' : y[i];
            if (p === q)
                continue;
            var np = /^[0-9]+$/.test(p), nq = /^[0-9]+$/.test(q);
            if (np && nq)
                return +p - +q || p.length - q.length;
            return p < q ? -1 : 1;
        }
        return 0;
    }

    /* The registry's order: by name, newest version first. */
    function sortModels(models) {
        return models.slice().sort(function (a, b) {
            return a.name < b.name ? -1 : a.name > b.name ? 1 : compareVersions(b.version, a.version);
        });
    }

    /* The graph of GET /v1/lineage's answer: nodes {id, kind, title,
     * lines, href, external, label (all of it in words)} and edges
     * {from, to}, each pointing the way things were made: image, code and
     * datasets -> job -> model. */
    function graph(lin) {
        var nodes = [], edges = [];
        var m = lin && lin.model, j = lin && lin.job;
        if (m) {
            nodes.push({id: 'model', kind: 'model', title: 'model ' + m.name + '@' + m.version,
                lines: ['stage ' + (m.stage || 'none'), shortDigest(m.digest)],
                href: modelHref(m), external: false,
                label: 'model ' + m.name + '@' + m.version + ', stage ' + (m.stage || 'none') +
                    (m.digest ? ', digest ' + m.digest : '')});
        }
        if (j) {
            var u = j.usage || {};
            nodes.push({id: 'job', kind: 'job', title: 'job ' + j.id + ' ' + (j.name || ''),
                lines: [j.state + ' \u00b7 ' + j.user + ' \u00b7 ' + j.team,
                    F.num(u.gpu_hours || 0, 3) + ' GPU-h \u00b7 ' + F.money(u.cost || 0, u.currency)],
                href: '/ui/jobs/' + j.id, external: false,
                label: 'job ' + j.id + ' ' + (j.name || '') + ', ' + j.state + ', user ' + j.user +
                    ', team ' + j.team});
            if (m)
                edges.push({from: 'job', to: 'model'});
            if (j.image) {
                nodes.push({id: 'image', kind: 'image', title: 'image',
                    lines: [j.image.ref, j.image.digest ? shortDigest(j.image.digest) : 'no digest'],
                    href: null, external: false,
                    label: 'image ' + j.image.ref + (j.image.digest ? ', digest ' + j.image.digest : ', no digest')});
                edges.push({from: 'image', to: 'job'});
            }
            if (j.code) {
                nodes.push({id: 'code', kind: 'code', title: 'code',
                    lines: [j.code.repo, '@ ' + j.code.commit],
                    href: safeUrl(j.code.repo), external: true,
                    label: 'code ' + j.code.repo + ' at commit ' + j.code.commit});
                edges.push({from: 'code', to: 'job'});
            }
            (j.datasets || []).forEach(function (d, i) {
                var id = 'dataset-' + i;
                nodes.push({id: id, kind: 'dataset', title: 'dataset ' + d.name + '@' + d.version + ' (' + d.mode + ')',
                    lines: [d.digest ? shortDigest(d.digest) : 'no digest recorded'],
                    href: null, external: false,
                    label: 'dataset ' + d.name + '@' + d.version + ', ' + (d.mode === 'rw' ? 'read-write' : 'read-only') +
                        (d.digest ? ', digest ' + d.digest : ', no digest recorded')});
                edges.push({from: id, to: 'job'});
            });
        }
        return {nodes: nodes, edges: edges};
    }

    /* A text cut to `max` characters with an ellipsis. */
    function fit(text, max) {
        text = String(text === null || text === undefined ? '' : text);
        if (max < 2)
            return text.slice(0, Math.max(0, max));
        return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
    }

    var NODE_H = 64, PAD = 8, GAP_X = 56, GAP_Y = 14, CHAR_W = 7.2, INDENT = 28;

    /* Where each node goes and the edges' paths, for a box `width` wide:
     * left to right (inputs, job, model in columns) when it is at least
     * `wide` (640) wide, else top down (the inputs stacked on a line down
     * the left to the job, the model under it). {orient, width, height,
     * nodes: [node + {x, y, w, h, text: [lines fitted]}], edges: [edge +
     * {d: SVG path}]}. */
    function layout(g, width, wide) {
        width = Math.max(240, width || 800);
        wide = wide || 640;
        var byId = {};
        var out = g.nodes.map(function (n) {
            var o = Object.assign({}, n);
            byId[n.id] = o;
            return o;
        });
        var inputs = out.filter(function (n) {
            return n.kind !== 'model' && n.kind !== 'job';
        });
        var job = byId.job, model = byId.model;
        var orient = width >= wide ? 'lr' : 'tb';
        var W, H = NODE_H, height;
        if (orient === 'lr') {
            var cols = (inputs.length ? 1 : 0) + (job ? 1 : 0) + (model ? 1 : 0);
            W = Math.min(260, Math.floor((width - 2 * PAD - (cols - 1) * GAP_X) / Math.max(1, cols)));
            var colH = Math.max(1, inputs.length) * H + Math.max(0, inputs.length - 1) * GAP_Y;
            height = colH + 2 * PAD;
            var midY = PAD + colH / 2 - H / 2;
            var x = PAD;
            inputs.forEach(function (n, i) {
                n.x = x;
                n.y = PAD + i * (H + GAP_Y);
            });
            if (inputs.length)
                x += W + GAP_X;
            if (job) {
                job.x = x;
                job.y = midY;
                x += W + GAP_X;
            }
            if (model) {
                model.x = x;
                model.y = midY;
                x += W;
            }
            width = x + PAD;
        } else {
            W = width - 2 * PAD;
            var y = PAD;
            inputs.forEach(function (n) {
                n.x = PAD + INDENT;
                n.y = y;
                y += H + GAP_Y;
            });
            if (job) {
                job.x = PAD;
                job.y = y + (inputs.length ? 6 : 0);
                y = job.y + H + GAP_X / 2;
            }
            if (model) {
                model.x = PAD;
                model.y = y;
                y += H;
            }
            height = y + PAD;
        }
        out.forEach(function (n) {
            n.w = orient === 'tb' && n.kind !== 'model' && n.kind !== 'job' ? W - INDENT : W;
            n.h = H;
            var chars = Math.floor((n.w - 20) / CHAR_W);
            n.text = [fit(n.title, chars)].concat(n.lines.map(function (l) {
                return fit(l, chars);
            }));
        });
        var edges = g.edges.map(function (e) {
            var a = byId[e.from], b = byId[e.to], d;
            if (orient === 'lr') {
                var x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2, mx = (x1 + x2) / 2;
                d = 'M' + x1 + ' ' + y1 + ' C' + mx + ' ' + y1 + ' ' + mx + ' ' + y2 + ' ' + x2 + ' ' + y2;
            } else if (b.kind === 'job') {
                var bus = PAD + INDENT / 2;
                d = 'M' + a.x + ' ' + (a.y + a.h / 2) + ' H' + bus + ' V' + b.y;
            } else {
                var cx = a.x + a.w / 2;
                d = 'M' + cx + ' ' + (a.y + a.h) + ' V' + b.y;
            }
            return Object.assign({}, e, {d: d});
        });
        return {orient: orient, width: width, height: height, nodes: out, edges: edges};
    }

    return {
        STAGES: STAGES, parseRef: parseRef, refHref: refHref, modelHref: modelHref, safeUrl: safeUrl,
        shortDigest: shortDigest, nextStages: nextStages, compareVersions: compareVersions,
        sortModels: sortModels, graph: graph, fit: fit, layout: layout
    };
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;
        var L = ModelLineage;
        var SVG = 'http://www.w3.org/2000/svg';

        function svg(tag, attrs) {
            var el = document.createElementNS(SVG, tag);
            Object.keys(attrs || {}).forEach(function (k) {
                if (attrs[k] !== null && attrs[k] !== undefined)
                    el.setAttribute(k, String(attrs[k]));
            });
            for (var i = 2; i < arguments.length; i++) {
                var c = arguments[i];
                if (c === null || c === undefined)
                    continue;
                el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
            }
            return el;
        }

        function stageBadge(s) {
            return Dom.badge(s || 'none', 'stage-' + (s || 'none'));
        }

        /* A stage's history as badges: none -> staging -> production,
         * each change's who and when in words beside it. */
        function historyInline(m) {
            var hist = m.history || [];
            if (!hist.length)
                return h('span', {class: 'muted'}, 'never moved');
            var out = [stageBadge(hist[0].from)];
            hist.forEach(function (x) {
                out.push(h('span', {'aria-hidden': 'true'}, ' \u2192 '));
                out.push(h('span', {class: 'model-sr'}, ' then '));
                out.push(h('span', {title: 'by ' + x.by + ' at ' + x.at + (x.comment ? ': ' + x.comment : '')},
                    stageBadge(x.to), h('small', {class: 'muted'}, ' ' + x.by + ', ' + Fmt.day(Fmt.ms(x.at)))));
            });
            return h('span', {class: 'model-hist'}, out);
        }

        function metricValue(v) {
            return typeof v === 'number' ? Fmt.num(v, 6) : String(v);
        }

        function metricsInline(m) {
            var keys = Object.keys(m.metrics || {});
            if (!keys.length)
                return '\u2014';
            var s = keys.slice(0, 3).map(function (k) {
                return k + '=' + metricValue(m.metrics[k]);
            }).join(' ');
            return keys.length > 3 ? s + ' \u2026' : s;
        }

        /* ---------------- the registry ---------------- */

        App.page('/models', {
            title: 'Models',
            render: function (ctx) {
                var q = {name: (ctx.query.get('name') || '').trim(), stage: ctx.query.get('stage') || '',
                    sort: ctx.query.get('sort') || ''};
                if (L.STAGES.indexOf(q.stage) < 0)
                    q.stage = '';
                var out = h('div');
                var form = h('form', {class: 'filters', 'aria-label': 'Filter models'},
                    Dom.field({label: 'Name', name: 'name', value: q.name, placeholder: 'exact name',
                        attrs: {autocomplete: 'off'}}),
                    Dom.field({label: 'Stage', name: 'stage', value: q.stage,
                        options: [['', 'Any']].concat(L.STAGES.map(function (s) {
                            return [s, s];
                        }))}),
                    h('button', {type: 'submit', class: 'primary'}, 'Show'));
                ctx.main.appendChild(h('h1', null, 'Models'));
                ctx.main.appendChild(h('p', {class: 'muted'}, 'Registered model versions, their stages and where they came from. ' +
                    (ctx.can('allTeams') ? 'Every team.' : 'Team ' + ctx.who.team + '.') +
                    ' Register one with sluice models register (docs/cli.md).'));
                ctx.main.appendChild(form);
                ctx.main.appendChild(out);

                function apply() {
                    ctx.setQuery({name: q.name, stage: q.stage, sort: q.sort}, {push: true});
                    load();
                }
                form.addEventListener('submit', function (ev) {
                    ev.preventDefault();
                    q.name = form.elements.name.value.trim();
                    q.stage = form.elements.stage.value;
                    apply();
                });
                form.elements.stage.addEventListener('change', function () {
                    q.name = form.elements.name.value.trim();
                    q.stage = form.elements.stage.value;
                    apply();
                });

                var models = null;
                var COLS = [
                    {key: 'ref', label: 'Model', sort: true, render: function (m) {
                        return Dom.link(L.modelHref(m), m.name + '@' + m.version);
                    }},
                    {key: 'stage', label: 'Stage', sort: true, render: function (m) {
                        return stageBadge(m.stage);
                    }},
                    {key: 'team', label: 'Team', sort: true},
                    {key: 'metrics', label: 'Metrics', render: metricsInline},
                    {key: 'registered_at', label: 'Registered', sort: true, render: function (m) {
                        return h('span', null, Fmt.time(Fmt.ms(m.registered_at)), h('small', {class: 'muted'}, ' by ' + m.registered_by));
                    }},
                    {key: 'job', label: 'Job', sort: true, num: true, render: function (m) {
                        return m.job ? Dom.link('/ui/jobs/' + m.job, String(m.job)) : '\u2014';
                    }},
                    {key: 'history', label: 'Stage history', render: historyInline}
                ];

                function sorted() {
                    var list = L.sortModels(models);
                    if (!q.sort)
                        return list;
                    var desc = q.sort.charAt(0) === '-', k = q.sort.replace(/^-/, '');
                    return list.map(function (m, i) {
                        return {m: m, i: i};
                    }).sort(function (a, b) {
                        var x = k === 'ref' ? a.m.name : a.m[k], y = k === 'ref' ? b.m.name : b.m[k];
                        var c = k === 'ref' && x === y ? L.compareVersions(a.m.version, b.m.version) :
                            typeof x === 'number' && typeof y === 'number' ? x - y :
                                String(x || '') < String(y || '') ? -1 : String(x || '') > String(y || '') ? 1 : 0;
                        return (desc ? -c : c) || a.i - b.i;
                    }).map(function (o) {
                        return o.m;
                    });
                }

                function show() {
                    Dom.clear(out);
                    out.appendChild(Dom.table(COLS, sorted(), {
                        sort: q.sort,
                        onSort: function (s) {
                            q.sort = s;
                            ctx.setQuery({name: q.name, stage: q.stage, sort: q.sort}, {push: false});
                            show();
                            var b = out.querySelector('th[aria-sort] button');
                            if (b)
                                b.focus();
                        },
                        caption: Fmt.int(models.length) + ' version' + (models.length === 1 ? '' : 's') +
                            (q.name || q.stage ? ' (filtered)' : ''),
                        empty: q.name || q.stage ? 'No model matches.' : 'No models registered yet.'
                    }));
                }

                function load() {
                    Dom.clear(out);
                    out.appendChild(h('p', {class: 'muted'}, 'Loading\u2026'));
                    return Api.get('/v1/models', {name: q.name, stage: q.stage}).then(function (a) {
                        if (!ctx.alive())
                            return;
                        models = a.models || [];
                        show();
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(out);
                        out.appendChild(Dom.message(e));
                    });
                }
                load();
            }
        });

        /* ---------------- one model ---------------- */

        /* The lineage drawing: each node a box with its kind and facts in
         * words, a link where the dashboard (or the code's repository) has
         * a page; arrows the way things were made. */
        function drawLineage(lay, ctx, self) {
            var s = svg('svg', {class: 'lineage-svg', viewBox: '0 0 ' + lay.width + ' ' + lay.height,
                width: lay.width, height: lay.height, role: 'group', 'aria-labelledby': 'lineage-h',
                'aria-describedby': 'lineage-desc'});
            s.appendChild(svg('desc', {id: 'lineage-desc'},
                'The model is made by its job, which ran the image, code and datasets on the left; the list beside says the same.'));
            s.appendChild(svg('defs', null,
                svg('marker', {id: 'lineage-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8,
                    markerHeight: 8, orient: 'auto-start-reverse'},
                svg('path', {d: 'M0 0 L10 5 L0 10 z', class: 'lineage-arrowhead'}))));
            lay.edges.forEach(function (e) {
                s.appendChild(svg('path', {d: e.d, class: 'lineage-edge', 'marker-end': 'url(#lineage-arrow)'}));
            });
            lay.nodes.forEach(function (n) {
                var g = svg('g', {class: 'lineage-node kind-' + n.kind, transform: 'translate(' + n.x + ' ' + n.y + ')'},
                    svg('title', null, n.label),
                    svg('rect', {width: n.w, height: n.h, rx: 8, ry: 8}),
                    svg('text', {x: 10, y: 20, class: 'lineage-title'}, n.text[0]));
                n.text.slice(1).forEach(function (t, i) {
                    g.appendChild(svg('text', {x: 10, y: 38 + i * 16, class: 'lineage-line'}, t));
                });
                var isSelf = n.href && n.href === self;
                if (n.href && !isSelf) {
                    var a = svg('a', {href: n.href, 'aria-label': n.label + (n.external ? ' (opens the repository)' : ''),
                        class: 'lineage-link'}, g);
                    if (n.external) {
                        a.setAttribute('target', '_blank');
                        a.setAttribute('rel', 'noopener noreferrer');
                    } else {
                        a.addEventListener('click', function (ev) {
                            if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey)
                                return;
                            ev.preventDefault();
                            ctx.navigate(n.href);
                        });
                    }
                    s.appendChild(a);
                } else {
                    if (isSelf)
                        g.setAttribute('aria-current', 'page');
                    g.setAttribute('role', 'img');
                    g.setAttribute('aria-label', n.label + (isSelf ? ' (this page)' : ''));
                    s.appendChild(g);
                }
            });
            return s;
        }

        /* The same facts as the drawing, as a nested list. */
        function lineageList(lin) {
            var m = lin.model, j = lin.job;
            var top = h('li', null, h('strong', null, 'Model ' + m.name + '@' + m.version), ', stage ', stageBadge(m.stage),
                ', digest ', h('code', null, m.digest), ', stored at ', h('code', null, m.uri));
            var ul = h('ul', {class: 'lineage-list', 'aria-label': 'Lineage as a list'}, top);
            if (!j) {
                top.appendChild(h('p', {class: 'muted'}, m.job ? 'Made by job ' + m.job + ', which you may not see or which is gone.' :
                    'No job recorded: the model was registered without one.'));
                return ul;
            }
            var u = j.usage || {};
            var inputs = h('ul');
            if (j.image) {
                inputs.appendChild(h('li', null, 'ran image ', h('code', null, j.image.ref),
                    j.image.digest ? [', digest ', h('code', null, j.image.digest)] : ' (no digest)'));
            }
            if (j.code) {
                var url = L.safeUrl(j.code.repo);
                inputs.appendChild(h('li', null, 'ran code ',
                    url ? h('a', {href: url, target: '_blank', rel: 'noopener noreferrer'}, j.code.repo) : h('code', null, j.code.repo),
                    ' at commit ', h('code', null, j.code.commit)));
            }
            (j.datasets || []).forEach(function (d) {
                inputs.appendChild(h('li', null, 'read dataset ', h('code', null, d.name + '@' + d.version),
                    d.mode === 'rw' ? ' (read-write)' : ' (read-only)',
                    d.digest ? [', digest ', h('code', null, d.digest)] : ', no digest recorded'));
            });
            if (!inputs.firstChild)
                inputs.appendChild(h('li', {class: 'muted'}, 'no image, code or datasets recorded'));
            top.appendChild(h('ul', null, h('li', null, 'made by ', Dom.link('/ui/jobs/' + j.id, 'job ' + j.id + ' ' + (j.name || '')),
                ' (', j.state, '; user ', j.user, ', team ', j.team, ', queue ', j.queue, '; ',
                Fmt.num(u.gpu_hours || 0, 4), ' GPU-hours, ', Fmt.num(u.cu || 0, 4), ' CU, ',
                Fmt.kwh(u.energy_kwh || 0), u.energy_measured ? ' measured' : ' estimated', ', ',
                Fmt.money(u.cost || 0, u.currency), ', ', Fmt.co2(u.co2_kg || 0), ' CO\u2082e)', inputs)));
            return ul;
        }

        function stageForm(ctx, m, onDone) {
            var opts = L.nextStages(m.stage);
            var box = h('section', {class: 'panel model-stage', 'aria-labelledby': 'model-stage-h'},
                h('h2', {id: 'model-stage-h'}, 'Change stage'));
            if (!opts.length) {
                box.appendChild(h('p', null, 'Archived: a version stays archived.'));
                return box;
            }
            var fallback = h('div');
            var form = h('form', {class: 'filters model-stage-form', novalidate: true},
                Dom.field({label: 'New stage', name: 'stage', value: opts[0], options: opts.map(function (s) {
                    return [s, s];
                })}),
                Dom.field({label: 'Comment', name: 'comment', placeholder: 'why (optional)', attrs: {maxlength: '512'}}),
                h('button', {type: 'submit', class: 'primary'}, 'Change stage'));
            box.appendChild(h('p', {class: 'muted'}, 'The policy\u2019s approvers may (by default admins and team-admins); sluiced refuses anyone else.'));
            box.appendChild(form);
            box.appendChild(fallback);
            form.addEventListener('submit', function (ev) {
                ev.preventDefault();
                var btn = form.querySelector('button[type=submit]');
                btn.disabled = true;
                Dom.fieldErrors(form, null, null, fallback);
                var body = {stage: form.elements.stage.value};
                var c = form.elements.comment.value.trim();
                if (c)
                    body.comment = c;
                Api.post('/v1/models/' + encodeURIComponent(m.name + '@' + m.version) + '/stage', body).then(function (nm) {
                    if (!ctx.alive())
                        return;
                    Dom.toast(m.name + '@' + m.version + ' moved to ' + nm.stage);
                    onDone(nm);
                }, function (e) {
                    if (!ctx.alive())
                        return;
                    btn.disabled = false;
                    Dom.fieldErrors(form, e, function (f) {
                        return f === 'stage' || f === 'comment' ? f : null;
                    }, fallback);
                });
            });
            return box;
        }

        App.page('/models/:ref', {
            title: 'Model',
            render: function (ctx) {
                var ref = ctx.params.ref;
                var self = L.refHref(ref);
                var pr = L.parseRef(ref);
                ctx.main.appendChild(h('p', {class: 'model-crumbs'}, Dom.link('/ui/models', '\u2190 Models')));
                var head = h('h1', {class: 'model-title'}, ref);
                ctx.main.appendChild(head);
                var body = h('div', null, h('p', {class: 'muted'}, 'Loading\u2026'));
                ctx.main.appendChild(body);
                document.title = ref + ' \u00b7 Sluice';
                var ro = null;
                ctx.onCleanup(function () {
                    if (ro)
                        ro.disconnect();
                });

                function show(m, lin, versions) {
                    Dom.clear(body);
                    Dom.clear(head);
                    head.appendChild(document.createTextNode(m.name + '@' + m.version + ' '));
                    head.appendChild(stageBadge(m.stage));
                    var facts = h('section', {class: 'panel', 'aria-labelledby': 'model-facts-h'},
                        h('h2', {id: 'model-facts-h'}, 'Version'),
                        Dom.kv([
                            ['Name', m.name], ['Version', m.version], ['Team', m.team],
                            ['Stage', stageBadge(m.stage)],
                            ['Digest', h('code', {class: 'model-digest'}, m.digest)],
                            ['Stored at', h('code', {class: 'model-digest'}, m.uri)],
                            ['Registered', Fmt.time(Fmt.ms(m.registered_at)) + ' by ' + m.registered_by],
                            ['Made by', m.job ? Dom.link('/ui/jobs/' + m.job, 'job ' + m.job) : 'no job recorded']
                        ]));
                    var mkeys = Object.keys(m.metrics || {});
                    var metrics = h('section', {class: 'panel', 'aria-labelledby': 'model-metrics-h'},
                        h('h2', {id: 'model-metrics-h'}, 'Metrics'),
                        mkeys.length ? Dom.table([{key: 'k', label: 'Metric'}, {key: 'v', label: 'Value', num: true}],
                            mkeys.map(function (k) {
                                return {k: k, v: metricValue(m.metrics[k])};
                            })) : h('p', {class: 'muted'}, 'None recorded.'));
                    var grid = h('div', {class: 'panels model-panels'}, facts, metrics);
                    body.appendChild(grid);
                    if (ctx.can('submit')) {
                        /* the roles with the models scope (admin,
                         * team-admin, member: the same as submit); the
                         * policy's approvers are for the API to judge */
                        body.appendChild(stageForm(ctx, m, function (nm) {
                            show(nm, lin ? Object.assign({}, lin, {model: nm}) : lin, versions ? versions.map(function (v) {
                                return v.version === nm.version ? nm : v;
                            }) : versions);
                            var hh = body.querySelector('#model-history-h');
                            if (hh) {
                                hh.setAttribute('tabindex', '-1');
                                hh.focus();
                            }
                        }));
                    }
                    var hist = [{at: m.registered_at, from: null, to: 'none', by: m.registered_by, comment: 'registered'}]
                        .concat(m.history || []);
                    body.appendChild(h('section', {'aria-labelledby': 'model-history-h'},
                        h('h2', {id: 'model-history-h'}, 'Stage history'),
                        Dom.table([
                            {key: 'at', label: 'When', render: function (x) {
                                return Fmt.time(Fmt.ms(x.at));
                            }},
                            {key: 'change', label: 'Change', render: function (x) {
                                return x.from === null ? h('span', null, 'registered at ', stageBadge('none')) :
                                    h('span', null, stageBadge(x.from), ' \u2192 ', stageBadge(x.to));
                            }},
                            {key: 'by', label: 'By'},
                            {key: 'comment', label: 'Comment', render: function (x) {
                                return x.from === null ? '' : x.comment || '';
                            }}
                        ], hist.slice().reverse())));

                    var linSec = h('section', {class: 'lineage', 'aria-labelledby': 'lineage-h'},
                        h('h2', {id: 'lineage-h'}, 'Lineage'));
                    body.appendChild(linSec);
                    if (!lin) {
                        linSec.appendChild(Dom.message('The lineage could not be read.'));
                    } else {
                        var drawBox = h('div', {class: 'lineage-draw'});
                        var listBox = h('div', {class: 'lineage-text'}, lineageList(lin));
                        linSec.appendChild(h('div', {class: 'lineage-grid'}, drawBox, listBox));
                        var g = L.graph(lin);
                        var orient = null;
                        var draw = function () {
                            var w = drawBox.clientWidth || 700;
                            var lay = L.layout(g, w, 640);
                            if (lay.orient === orient && drawBox.firstChild)
                                return;
                            orient = lay.orient;
                            Dom.clear(drawBox);
                            drawBox.appendChild(drawLineage(lay, ctx, self));
                        };
                        draw();
                        if (typeof ResizeObserver !== 'undefined') {
                            if (ro)
                                ro.disconnect();
                            ro = new ResizeObserver(function () {
                                draw();
                            });
                            ro.observe(drawBox);
                        }
                    }

                    if (versions && versions.length > 1) {
                        body.appendChild(h('section', {'aria-labelledby': 'model-versions-h'},
                            h('h2', {id: 'model-versions-h'}, 'Versions of ' + m.name),
                            Dom.table([
                                {key: 'version', label: 'Version', render: function (v) {
                                    return v.version === m.version ? h('strong', {'aria-current': 'page'}, v.version + ' (this one)') :
                                        Dom.link(L.modelHref(v), v.version);
                                }},
                                {key: 'stage', label: 'Stage', render: function (v) {
                                    return stageBadge(v.stage);
                                }},
                                {key: 'metrics', label: 'Metrics', render: metricsInline},
                                {key: 'registered_at', label: 'Registered', render: function (v) {
                                    return Fmt.time(Fmt.ms(v.registered_at)) + ' by ' + v.registered_by;
                                }}
                            ], L.sortModels(versions))));
                    }
                }

                var path = encodeURIComponent(ref);
                Promise.all([
                    Api.get('/v1/models/' + path),
                    Api.get('/v1/lineage/' + encodeURIComponent('model:' + ref)).catch(function () {
                        return null;
                    }),
                    pr ? Api.get('/v1/models', {name: pr.name}).then(function (a) {
                        return a.models || [];
                    }, function () {
                        return null;
                    }) : Promise.resolve(null)
                ]).then(function (r) {
                    if (ctx.alive())
                        show(r[0], r[1], r[2]);
                }, function (e) {
                    if (!ctx.alive())
                        return;
                    Dom.clear(body);
                    body.appendChild(Dom.message(e));
                });
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = ModelLineage;
