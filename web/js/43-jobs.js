/*
 * 43-jobs.js - the Jobs page (/ui/jobs): the jobs the token may see, 50 a
 * page, filtered, sorted and counted by sluiced (GET /v1/jobs with state,
 * team, queue, user, priority_class, gpu_model, q, sort, offset, limit and
 * count=true), so that a store of 100,000 jobs costs the browser one page.
 *
 * The filters live in the URL (?state=&team=&queue=&user=&priority_class=
 * &gpu_model=&q=&sort=&offset=): a change pushes a history entry, back and
 * forward show the page again from it. One request per change; a change
 * aborts the request it supersedes; the text fields wait 250 ms for the
 * typing to stop. Live updates: the page shown is asked for again every
 * 5 s with its ETag (a 304 costs no body), and only the rows whose shown
 * fields changed are replaced, so that focus and scroll stay.
 *
 * JobsList (pure, loaded by node's test runner too): the URL's query <->
 * the filter state <-> the API's parameters, the rows' change signature,
 * the short times and durations the rows show.
 */
'use strict';

var JobsList = (function () {
    var PAGE = 50;
    var DEFAULT_SORT = '-id';
    /* `array` has no control: a job page links to its array's elements */
    var FILTERS = ['state', 'team', 'queue', 'user', 'priority_class', 'gpu_model', 'q', 'array'];
    var SORTS = ['id', 'submitted', 'started', 'finished', 'name', 'state', 'team', 'queue',
        'user', 'priority'];
    var STATES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Cancelled', 'Preempted', 'Lost',
        'Timeout'];
    var FINAL = ['Succeeded', 'Failed', 'Cancelled', 'Lost', 'Timeout'];

    function getter(query) {
        if (query && typeof query.get === 'function')
            return function (k) {
                return query.get(k);
            };
        return function (k) {
            return query ? query[k] : null;
        };
    }

    /* The filter state of a URL query (URLSearchParams or a plain object):
     * every filter a trimmed string ('' = any), sort one of SORTS with an
     * optional '-' (else the default, newest first), offset a whole
     * multiple of nothing in particular, 0 when absent or unreadable. */
    function parse(query) {
        var get = getter(query);
        var st = {};
        FILTERS.forEach(function (k) {
            var v = get(k);
            st[k] = v === null || v === undefined ? '' : String(v).trim();
        });
        var s = String(get('sort') || '');
        st.sort = SORTS.indexOf(s.replace(/^-/, '')) >= 0 ? s : DEFAULT_SORT;
        var off = String(get('offset') || '');
        st.offset = /^[0-9]{1,9}$/.test(off) ? parseInt(off, 10) : 0;
        return st;
    }

    /* The URL query of a filter state: what differs from the defaults. */
    function toQuery(st) {
        var all = Object.assign({}, st, {sort: st.sort === DEFAULT_SORT ? '' : st.sort,
            offset: st.offset > 0 ? String(st.offset) : ''});
        var q = {};
        FILTERS.concat('sort', 'offset').forEach(function (k) {
            if (all[k])
                q[k] = all[k];
        });
        return q;
    }

    /* The GET /v1/jobs parameters of a filter state: one page and its
     * total. An empty state filter is every state. */
    function apiParams(st) {
        var p = {state: st.state || 'all'};
        FILTERS.forEach(function (k) {
            if (k !== 'state' && st[k])
                p[k] = st[k];
        });
        p.sort = st.sort || DEFAULT_SORT;
        if (st.offset > 0)
            p.offset = st.offset;
        p.limit = PAGE;
        p.count = 'true';
        return p;
    }

    /* The same filter state, as the page's URL sees it. */
    function same(a, b) {
        var qa = toQuery(a), qb = toQuery(b);
        var ka = Object.keys(qa).sort(), kb = Object.keys(qb).sort();
        return ka.join() === kb.join() && ka.every(function (k) {
            return qa[k] === qb[k];
        });
    }

    function spec(job) {
        var s = job && job.spec;
        return s && s.spec ? s.spec : s || {};
    }

    /* What a row shows of a job, as one string: a row is built again only
     * when this changes (durations that grow are updated in place). */
    function rowSig(job) {
        var sp = spec(job);
        return [job.id, job.name, job.state, job.held ? 1 : 0, job.idle ? 1 : 0, job.team, job.user,
            job.queue, job.priority_class, job.submitted_at, job.started_at, job.finished_at,
            job.reason, job.message, job.exit_code, JSON.stringify(sp.resources || null), sp.tasks,
            job.array_job_id, job.array_index].join('\u0001');
    }

    function pad(n) {
        return (n < 10 ? '0' : '') + n;
    }

    /* A time in few characters: "14:03:12" today, "12-01 14:03" this
     * year, "2025-12-01" before; "—" when absent. Local time. */
    function shortTime(ms, now) {
        if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0)
            return '\u2014';
        var d = new Date(ms), n = new Date(now === undefined ? Date.now() : now);
        if (d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate())
            return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
        if (d.getFullYear() === n.getFullYear())
            return pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes());
        return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
    }

    /* The "Started" and "Finished" cells' words: {text, title, live}
     * where live (a start in ms) means the text is a duration that grows
     * ("waiting 5m" from submission, "running 3m" from start). */
    function timing(job, now) {
        var sub = Fmt.ms(job.submitted_at), st = Fmt.ms(job.started_at), fin = Fmt.ms(job.finished_at);
        now = now === undefined ? Date.now() : now;
        var since = function (a, b) {
            return Fmt.duration(Math.max(0, b - a) / 1000);
        };
        /* a duration that grows from `from` */
        var growing = function (word, from, title) {
            return {text: word + since(from, now), live: from, prefix: word, title: title};
        };
        /* a time, and how long the step before it took */
        var at = function (t, from, word) {
            return {text: shortTime(t, now), title: Fmt.time(t) + (from ? ' (' + word + since(from, t) + ')' : '')};
        };
        var none = {text: '\u2014', title: null};
        return {
            started: job.state === 'Pending' ? growing('waiting ', sub, 'submitted ' + Fmt.time(sub)) :
                st ? at(st, sub, 'waited ') : {text: none.text, title: 'never started'},
            finished: job.state === 'Running' && st ? growing('running ', st, 'started ' + Fmt.time(st)) :
                fin ? at(fin, st, 'ran ') : none
        };
    }

    /* The GPU models of GET /v1/nodes, sorted, each once. */
    function gpuModels(nodes) {
        var seen = {};
        ((nodes && nodes.nodes) || []).forEach(function (n) {
            (n.gpus || []).forEach(function (g) {
                if (g && g.model)
                    seen[g.model] = true;
            });
        });
        return Object.keys(seen).sort();
    }

    /* The state filter's choices: [value, label]. */
    function stateOptions() {
        return [['', 'Any state'], ['Pending,Running', 'Pending or running']].concat(STATES.map(function (s) {
            return [s, s];
        }));
    }

    return {
        PAGE: PAGE, DEFAULT_SORT: DEFAULT_SORT, FILTERS: FILTERS, SORTS: SORTS, STATES: STATES,
        FINAL: FINAL, parse: parse, toQuery: toQuery, apiParams: apiParams, same: same, spec: spec,
        rowSig: rowSig, shortTime: shortTime, timing: timing, gpuModels: gpuModels,
        stateOptions: stateOptions
    };
})();

if (typeof module !== 'undefined' && module.exports)
    module.exports = JobsList;

/* JobsData: what the job pages choose from, asked for once and kept for a
 * few minutes (the jobs page's filters, the submit form): teams, queues
 * and priority classes in one go; the GPU models apart, as they come from
 * GET /v1/nodes, whose answer is large on a large cluster (846 KB for
 * 1,000 nodes of 8 GPUs): the jobs page asks for them only when its model
 * filter is first used. A part that fails is an empty list. */
var JobsData = typeof App === 'undefined' ? null : (function () {
    var TTL = 300000;
    var cache = {};

    function once(key, path, pick) {
        var c = cache[key];
        if (c && Date.now() - c.at < TTL)
            return c.promise;
        var p = Api.get(path).then(pick, function () {
            delete cache[key];
            return [];
        });
        cache[key] = {at: Date.now(), promise: p};
        return p;
    }

    return {
        /* {teams: [{name, default_queue}], queues: [{name, team, ...}],
         * classes: [{name, default, ...}]} */
        lists: function () {
            return Promise.all([
                once('teams', '/v1/teams', function (r) {
                    return r.teams || [];
                }),
                once('queues', '/v1/queues', function (r) {
                    return r.queues || [];
                }),
                once('classes', '/v1/priorityclasses', function (r) {
                    return r.priority_classes || [];
                })
            ]).then(function (a) {
                return {teams: a[0], queues: a[1], classes: a[2]};
            });
        },
        /* the GPU models of the nodes, sorted */
        models: function () {
            return once('models', '/v1/nodes', JobsList.gpuModels);
        }
    };
})();

if (typeof App !== 'undefined') (function () {
    var h = Dom.h;
    var POLL_MS = 5000;

    /* Fill a select with "any" and the choices, keeping its value (added
     * as a choice of its own when the list lacks it: a URL's filter
     * shows as it is). */
    function setOptions(sel, anyText, choices, value) {
        var frag = document.createDocumentFragment();
        var have = {};
        frag.appendChild(h('option', {value: ''}, anyText));
        choices.forEach(function (c) {
            var v = Array.isArray(c) ? c[0] : c, t = Array.isArray(c) ? c[1] : c;
            if (v === '' || have[v])
                return;
            have[v] = true;
            frag.appendChild(h('option', {value: v}, t));
        });
        if (value && !have[value])
            frag.appendChild(h('option', {value: value}, value));
        Dom.clear(sel).appendChild(frag);
        sel.value = value || '';
    }

    /* Replace `old` by `neu`, keeping the keyboard's place: the focused
     * control inside `old` is focused again at the same place in `neu`
     * (or its first enabled control). */
    function swap(old, neu) {
        var act = document.activeElement;
        var idx = -1;
        var SEL = 'a,button,input,select,textarea';
        if (act && old.contains(act))
            idx = Array.prototype.indexOf.call(old.querySelectorAll(SEL), act);
        old.parentNode.replaceChild(neu, old);
        if (idx >= 0) {
            var all = neu.querySelectorAll(SEL);
            var to = all[idx] && !all[idx].disabled ? all[idx] : Array.prototype.filter.call(all, function (e) {
                return !e.disabled;
            })[0];
            if (to)
                to.focus();
        }
        return neu;
    }

    function liveCell(t) {
        return h('span', {title: t.title, 'data-live': t.live || null, 'data-prefix': t.prefix || null,
            class: t.live ? 'muted' : null}, t.text);
    }

    var COLS = [
        {key: 'id', label: 'ID', sort: 'id', num: true, render: function (j) {
            return [Dom.link('/ui/jobs/' + j.id, String(j.id), {'aria-label': 'job ' + j.id}),
                j.array_job_id !== null && j.array_job_id !== undefined ?
                    h('small', {class: 'muted'}, ' ' + j.array_job_id + '_' + j.array_index) : null];
        }},
        {key: 'name', label: 'Name', sort: 'name', render: function (j) {
            return j.name ? h('span', {class: 'jobs-name', title: j.name}, j.name) : null;
        }},
        {key: 'state', label: 'State', sort: 'state', render: function (j) {
            return [Dom.badge(j.state), j.held ? [' ', Dom.badge('held')] : null,
                j.idle ? [' ', Dom.badge('idle')] : null,
                JobsList.FINAL.indexOf(j.state) >= 0 && j.exit_code !== null && j.exit_code !== undefined &&
                    j.exit_code !== 0 ? h('small', {class: 'muted'}, ' exit ' + j.exit_code) : null];
        }},
        {key: 'team', label: 'Team', sort: 'team'},
        {key: 'user', label: 'User', sort: 'user'},
        {key: 'queue', label: 'Queue', sort: 'queue'},
        {key: 'priority_class', label: 'Priority', sort: 'priority'},
        {key: 'resources', label: 'Resources', render: function (j) {
            var sp = JobsList.spec(j);
            return Fmt.resources(sp.resources, sp.tasks);
        }},
        {key: 'submitted', label: 'Submitted', sort: 'submitted', render: function (j) {
            var t = Fmt.ms(j.submitted_at);
            return h('span', {title: Fmt.time(t)}, JobsList.shortTime(t));
        }},
        {key: 'started', label: 'Started', sort: 'started', render: function (j) {
            return liveCell(JobsList.timing(j).started);
        }},
        {key: 'finished', label: 'Finished', sort: 'finished', render: function (j) {
            return liveCell(JobsList.timing(j).finished);
        }},
        {key: 'reason', label: 'Reason', render: function (j) {
            var text = j.state === 'Pending' ? j.reason : j.message;
            return text ? h('span', {class: 'jobs-reason' + (j.state === 'Pending' ? '' : ' muted'), title: text}, text) : null;
        }}
    ];

    function renderRow(job) {
        var tr = h('tr', {'data-id': job.id});
        COLS.forEach(function (c) {
            var v = c.render ? c.render(job) : job[c.key];
            tr.appendChild(h('td', {class: c.num ? 'num' : null, 'data-col': c.key},
                v === null || v === undefined || v === '' ? '\u2014' : v));
        });
        return tr;
    }

    App.page('/jobs', {
        title: 'Jobs',
        render: function (ctx) {
            var st = JobsList.parse(ctx.query);
            var ctl = null;          /* the request in flight */
            var etag = null;         /* of the page shown */
            var rows = {};           /* id -> {sig, tr} of the rows shown */
            var shown = null;        /* {offset, total} the pager shows */
            var timers = {};

            var fState = Dom.field({label: 'State', name: 'state', options: JobsList.stateOptions(), value: st.state});
            var fTeam = Dom.field({label: 'Team', name: 'team', options: [['', 'Any team']], value: st.team});
            var fQueue = Dom.field({label: 'Queue', name: 'queue', options: [['', 'Any queue']], value: st.queue});
            var fUser = Dom.field({label: 'User', name: 'user', type: 'search', value: st.user, placeholder: 'exact name',
                attrs: {autocomplete: 'off', spellcheck: 'false'}});
            var fClass = Dom.field({label: 'Priority class', name: 'priority_class', options: [['', 'Any class']],
                value: st.priority_class});
            var fModel = Dom.field({label: 'GPU model', name: 'gpu_model', options: [['', 'Any model']], value: st.gpu_model});
            var fQ = Dom.field({label: 'Name contains', name: 'q', type: 'search', value: st.q,
                attrs: {autocomplete: 'off', spellcheck: 'false'}});
            var input = function (f) {
                return f.querySelector('input,select');
            };
            [[fTeam, st.team], [fQueue, st.queue], [fClass, st.priority_class], [fModel, st.gpu_model]].forEach(function (p) {
                setOptions(input(p[0]), input(p[0]).options[0].textContent, [], p[1]);
            });
            var reset = h('button', {type: 'button', class: 'jobs-reset'}, 'Clear filters');
            var form = h('form', {class: 'filters jobs-filters', role: 'search', 'aria-label': 'Filter jobs'},
                fState, fTeam, fQueue, fUser, fClass, fModel, fQ, h('div', {class: 'field jobs-reset-wrap'}, reset));
            var count = h('span', {class: 'jobs-count', 'aria-live': 'polite'}, 'Loading\u2026');
            var arrayBox = h('span', {class: 'jobs-array'});
            function arrayNote() {
                Dom.clear(arrayBox);
                if (st.array)
                    arrayBox.appendChild(h('span', null, 'elements of array ' + st.array + ' ',
                        h('button', {type: 'button', class: 'link', onclick: function () {
                            change({array: ''});
                            arrayNote();
                            reset.focus();
                        }}, 'show all')));
            }
            arrayNote();
            var updated = h('span', {class: 'muted jobs-updated'});
            var msg = h('div', {class: 'jobs-msg'});
            var sortOpts = function () {
                return {sort: st.sort, onSort: function (s) {
                    change({sort: s});
                }};
            };
            var wrap = Dom.table(COLS, [], sortOpts());
            var table = wrap.querySelector('table');
            table.classList.add('jobs-table');
            var tbody = table.querySelector('tbody');
            Dom.clear(tbody);
            tbody.appendChild(h('tr', {class: 'jobs-placeholder'}, h('td', {colspan: COLS.length, class: 'empty'}, 'Loading\u2026')));
            wrap.setAttribute('aria-busy', 'true');
            var pagerSlot = h('div', {class: 'jobs-pager'});

            ctx.main.appendChild(h('h1', null, 'Jobs'));
            ctx.main.appendChild(form);
            ctx.main.appendChild(h('div', {class: 'toolbar'}, count, arrayBox, h('span', {class: 'spacer'}), updated));
            ctx.main.appendChild(msg);
            ctx.main.appendChild(wrap);
            ctx.main.appendChild(pagerSlot);

            form.addEventListener('submit', function (ev) {
                ev.preventDefault();
            });

            /* The filters' choices arrive while the first page loads;
             * the GPU models when that select is first used. */
            var names = function (list) {
                return list.map(function (x) {
                    return x.name;
                });
            };
            JobsData.lists().then(function (o) {
                if (!ctx.alive())
                    return;
                /* a member, viewer or team-admin lists its own team only
                 * (another is refused 403): offer that one */
                setOptions(input(fTeam), 'Any team', ctx.can('allTeams') ? names(o.teams) : [ctx.who.team], st.team);
                fillQueues(o.queues);
                setOptions(input(fClass), 'Any class', names(o.classes), st.priority_class);
            });
            var modelsAsked = false;
            function loadModels() {
                if (modelsAsked)
                    return;
                modelsAsked = true;
                JobsData.models().then(function (models) {
                    if (ctx.alive())
                        setOptions(input(fModel), 'Any model', models, st.gpu_model);
                });
            }
            ['focus', 'pointerdown'].forEach(function (ev) {
                input(fModel).addEventListener(ev, loadModels);
            });

            var allQueues = [];
            function fillQueues(queues) {
                if (queues)
                    allQueues = queues;
                var list = allQueues.filter(function (q) {
                    return !st.team || q.team === st.team;
                }).map(function (q) {
                    return [q.name, st.team ? q.name : q.name + ' (' + q.team + ')'];
                });
                setOptions(input(fQueue), 'Any queue', list, st.queue);
            }

            /* A filter, sort or page change: the URL first (a history
             * entry unless `replace`), then one request. */
            function change(patch, replace) {
                var next = Object.assign({}, st, patch);
                if (!('offset' in patch))
                    next.offset = 0;
                if (JobsList.same(next, st))
                    return;
                var sortChanged = next.sort !== st.sort;
                st = next;
                ctx.setQuery(JobsList.toQuery(st), {push: !replace});
                if (sortChanged)
                    swap(table.querySelector('thead'), Dom.table(COLS, [], sortOpts()).querySelector('thead'));
                etag = null;
                load(false);
            }

            ['state', 'team', 'queue', 'priority_class', 'gpu_model'].forEach(function (k) {
                form.elements[k].addEventListener('change', function () {
                    var patch = {};
                    patch[k] = form.elements[k].value;
                    if (k === 'team') {
                        /* a queue of another team would match nothing */
                        var q = allQueues.filter(function (x) {
                            return x.name === st.queue;
                        })[0];
                        if (q && patch.team && q.team !== patch.team)
                            patch.queue = '';
                    }
                    change(patch);
                    if (k === 'team')
                        fillQueues();
                });
            });

            /* Text fields: 250 ms after the last key; the first change of
             * a burst of typing adds a history entry, the rest replace it. */
            ['user', 'q'].forEach(function (k) {
                var el = form.elements[k];
                var typing = false;
                el.addEventListener('input', function () {
                    clearTimeout(timers[k]);
                    timers[k] = setTimeout(function () {
                        var patch = {};
                        patch[k] = el.value.trim();
                        change(patch, typing);
                        typing = true;
                    }, 250);
                });
                el.addEventListener('blur', function () {
                    typing = false;
                });
                el.addEventListener('keydown', function (ev) {
                    if (ev.key === 'Enter') {
                        clearTimeout(timers[k]);
                        var patch = {};
                        patch[k] = el.value.trim();
                        change(patch, typing);
                        typing = false;
                    }
                });
            });

            reset.addEventListener('click', function () {
                var patch = {};
                JobsList.FILTERS.forEach(function (k) {
                    if (form.elements[k])
                        form.elements[k].value = '';
                    patch[k] = '';
                });
                change(patch);
                fillQueues();
                arrayNote();
            });

            ctx.onCleanup(function () {
                Object.keys(timers).forEach(function (k) {
                    clearTimeout(timers[k]);
                });
                if (ctl)
                    ctl.abort();
            });

            /* Durations that grow, every poll: no row is built again. */
            function tickLive() {
                var now = Date.now();
                tbody.querySelectorAll('[data-live]').forEach(function (el) {
                    var t = +el.getAttribute('data-live');
                    el.textContent = (el.getAttribute('data-prefix') || '') + Fmt.duration(Math.max(0, now - t) / 1000);
                });
                updated.textContent = 'Updated ' + JobsList.shortTime(now, now);
            }

            /* Show a page of jobs: a row is built only for a job whose
             * shown fields changed; rows that stay are never moved, so
             * that focus and scroll stay where they are. */
            function apply(ans) {
                var jobs = ans.jobs || [];
                var next = {};
                var want = jobs.map(function (j) {
                    var sig = JobsList.rowSig(j);
                    var old = rows[j.id];
                    var r = old && old.sig === sig ? old : {sig: sig, tr: renderRow(j)};
                    if (old && old !== r && old.tr.parentNode === tbody) {
                        /* changed in place: swap it, keeping focus */
                        swap(old.tr, r.tr);
                    }
                    next[j.id] = r;
                    return r.tr;
                });
                Array.prototype.slice.call(tbody.children).forEach(function (tr) {
                    if (want.indexOf(tr) < 0)
                        tbody.removeChild(tr);
                });
                /* new rows go in in runs, each run as one fragment */
                var cur = tbody.firstChild;
                var frag = null;
                function flush() {
                    if (frag)
                        tbody.insertBefore(frag, cur);
                    frag = null;
                }
                want.forEach(function (tr) {
                    if (cur === tr) {
                        flush();
                        cur = cur.nextSibling;
                    } else if (tr.parentNode === tbody) {
                        flush();
                        tbody.insertBefore(tr, cur);
                    } else {
                        frag = frag || document.createDocumentFragment();
                        frag.appendChild(tr);
                    }
                });
                flush();
                rows = next;
                if (!jobs.length) {
                    tbody.appendChild(h('tr', {class: 'jobs-placeholder'}, h('td', {colspan: COLS.length, class: 'empty'},
                        st.offset > 0 ? 'No jobs on this page.' : 'No jobs match these filters.')));
                }
                var total = typeof ans.total === 'number' ? ans.total : null;
                count.textContent = total === null ? Fmt.int(jobs.length) + ' jobs shown' :
                    Fmt.int(total) + (total === 1 ? ' job' : ' jobs');
                if (!shown || shown.offset !== st.offset || shown.total !== total || shown.n !== jobs.length) {
                    /* without a total (an older sluiced) Next stays while pages are full */
                    var pgTotal = total !== null ? total : jobs.length < JobsList.PAGE ? st.offset + jobs.length : null;
                    var pg = h('div', {class: 'jobs-pager'}, Dom.pager(st.offset, JobsList.PAGE, pgTotal, function (o) {
                        change({offset: o});
                        wrap.scrollIntoView({block: 'nearest'});
                    }));
                    pagerSlot = swap(pagerSlot, pg);
                    shown = {offset: st.offset, total: total, n: jobs.length};
                }
                tickLive();
            }

            /* One request for the page the filters name. A poll (`poll`
             * true) sends the ETag and gives way to a change; a change
             * aborts whatever is in flight. */
            function load(poll) {
                if (ctl) {
                    if (poll)
                        return Promise.resolve();
                    ctl.abort();
                }
                var mine = ctl = new AbortController();
                wrap.setAttribute('aria-busy', 'true');
                var t0 = performance.now();
                return Api.get('/v1/jobs', JobsList.apiParams(st), {etag: poll && etag ? etag : '', signal: mine.signal})
                    .then(function (ans) {
                        if (!ctx.alive() || ctl !== mine)
                            return;
                        if (ans.notModified) {
                            tickLive();
                        } else {
                            etag = ans._etag || null;
                            Dom.clear(msg);
                            tbody.querySelectorAll('.jobs-placeholder').forEach(function (tr) {
                                tr.remove();
                            });
                            apply(ans);
                        }
                        Dom.clear(msg);
                        wrap.dataset.ms = String(Math.round(performance.now() - t0));
                    }, function (e) {
                        if (e && e.name === 'AbortError')
                            return;
                        if (!ctx.alive() || ctl !== mine)
                            return;
                        Dom.clear(msg).appendChild(Dom.message(e));
                        if (!poll) {
                            count.textContent = '';
                            rows = {};
                            Dom.clear(tbody).appendChild(h('tr', {class: 'jobs-placeholder'},
                                h('td', {colspan: COLS.length, class: 'empty'}, 'No jobs to show.')));
                        }
                    }).then(function () {
                        if (ctl === mine) {
                            ctl = null;
                            wrap.setAttribute('aria-busy', 'false');
                        }
                    });
            }

            ctx.every(POLL_MS, function () {
                return load(!!etag || Object.keys(rows).length > 0);
            });
        }
    });
})();
