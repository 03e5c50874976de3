/*
 * 44-job.js - the job page (/ui/jobs/:id): what a job is, where it runs,
 * why it waits, what it printed and what it cost.
 *
 *   GET /v1/jobs/{id}            the job (ETag polling every 5 s until it
 *                                has ended; a log's X-Sluice-Job-State that
 *                                differs asks again at once)
 *   GET /v1/jobs/{id}/events     the state timeline, when the job changed
 *   GET /v1/jobs/{id}/explain    while Pending: blockers, position, ETA
 *   GET /v1/jobs/{id}/attempts   the attempts, for the log's selector
 *   GET /v1/jobs/{id}/logs       a task's (and attempt's) output from an
 *                                offset; followed every 1.5 s while it runs
 *   GET /v1/lineage/job:{id}     usage (GPU-hours, CU, energy, cost, CO2),
 *                                image, code, datasets
 *   GET /v1/models               the models registered from the job
 *   DELETE /v1/jobs/{id}, POST /v1/jobs/{id}/hold|release   the actions,
 *                                offered to the roles that submit, on their
 *                                own jobs (team-admins and admins: any
 *                                they see); the API decides, its refusal
 *                                is shown as it says it.
 *
 * JobPage (pure, loaded by node's test runner too): a blocker in words,
 * the ETA's words, which actions to offer, the log's follow rules.
 */
'use strict';

var JobPage = (function () {
    var FINAL = ['Succeeded', 'Failed', 'Cancelled', 'Lost', 'Timeout'];

    function isFinal(state) {
        return FINAL.indexOf(state) >= 0;
    }

    function n(v) {
        return typeof v === 'number' ? (Math.round(v * 1000) / 1000).toLocaleString('en-US') : String(v);
    }

    /* A resource's amount with its unit: memory in bytes as GiB. */
    function amount(resource, v) {
        if (v === null || v === undefined)
            return '?';
        if (resource === 'memory')
            return typeof Fmt !== 'undefined' ? Fmt.bytes(v) : v + ' B';
        if (resource === 'cpu')
            return n(v) + ' CPU';
        if (/^gpu/.test(resource || ''))
            return n(v) + ' ' + resource.replace(/^gpu/, 'GPU');
        return n(v);
    }

    /* One blocker of GET /v1/jobs/{id}/explain in words: {title, text}. */
    function blockerText(b) {
        var r = b.resource;
        var lim = function () {
            return 'uses ' + amount(r, b.used) + ' of ' + amount(r, b.limit) +
                (b.would_use !== undefined ? ', would use ' + amount(r, b.would_use) : '') +
                (b.short !== undefined ? ', short by ' + amount(r, b.short) : '');
        };
        switch (b.kind) {
        case 'cannot_run':
            return {title: 'Cannot run' + (b.cause ? ' (' + ({cluster: 'no node or placement holds it',
                limit: 'over a limit of its queue', nodes_out: 'only nodes out of service could hold it'}[b.cause] ||
                b.cause) + ')' : ''), text: (b.field ? b.field + ': ' : '') + (b.detail || '')};
        case 'quota':
            return {title: 'Quota of queue ' + b.queue, text: 'the queue ' + lim()};
        case 'cohort':
            return {title: 'Cohort ' + (b.cohort || ''), text: b.detail || 'the cohort has ' +
                amount(r, b.limit !== undefined && b.used !== undefined ? b.limit - b.used : null) + ' left to lend' +
                (b.short !== undefined ? ', short by ' + amount(r, b.short) : '')};
        case 'user_limit':
            return {title: 'Per-user limit of queue ' + b.queue, text: (b.user || 'the user') + ' ' + lim()};
        case 'model_quota':
            return {title: 'GPU model quota of queue ' + b.queue, text: 'the queue ' + lim()};
        case 'nodes':
            var rej = b.nodes_rejected || {};
            var why = Object.keys(rej).filter(function (k) {
                return rej[k];
            }).map(function (k) {
                return rej[k] + ' ' + ({gpus: 'too few free GPUs', gpu_model: 'another GPU model',
                    cpu: 'too few free CPUs', memory: 'too little free memory',
                    unschedulable: 'take no work'}[k] || k);
            });
            return {title: 'No node fits it now', text: (b.nodes !== undefined ? n(b.nodes) + ' nodes looked at' : 'nodes') +
                (why.length ? ': ' + why.join(', ') : '') +
                ((b.unschedulable_nodes || []).length ? '; out of service: ' + b.unschedulable_nodes.map(function (u) {
                    return u.node + (u.why ? ' (' + u.why + ')' : '');
                }).join(', ') : '')};
        case 'gang':
            return {title: 'Gang', text: n(b.tasks_fit) + ' of its ' + n(b.tasks) + ' tasks fit' +
                (b.topology && b.topology !== 'any' ? ' (' + b.topology + ')' : '') + '; all start together or none'};
        case 'reservation':
            return {title: 'Reserved for an earlier job', text: b.detail ||
                'it fits only on resources held for an earlier job' + (b.until ? ' until ' + b.until : '')};
        case 'backoff':
            return {title: 'Retry backoff', text: 'its next attempt waits' + (b.until ? ' until ' +
                (typeof Fmt !== 'undefined' ? Fmt.time(Fmt.ms(b.until)) : b.until) : '')};
        case 'preempting':
            return {title: 'Preempting', text: 'the jobs it preempted are still stopping' +
                ((b.victims || []).length ? ': ' + b.victims.join(', ') : '')};
        case 'dependency':
            return {title: 'Dependency', text: b.detail || ''};
        default:
            return {title: b.kind, text: b.detail || Object.keys(b).filter(function (k) {
                return k !== 'kind';
            }).map(function (k) {
                return k + ' ' + (typeof b[k] === 'object' ? JSON.stringify(b[k]) : b[k]);
            }).join(', ')};
        }
    }

    /* The ETA of an explanation in words. */
    function etaText(x, now) {
        if (!x || !x.eta)
            return x && x.state === 'Pending' ? 'no estimate (no reservation, and the running jobs set no maxRuntime that frees room)' : null;
        var t = typeof Fmt !== 'undefined' ? Fmt.ms(x.eta) : Date.parse(x.eta);
        var when = typeof Fmt !== 'undefined' ? Fmt.time(t) + ' (' + Fmt.ago(t, now) + ')' : x.eta;
        if (x.eta_basis === 'reservation')
            return when + ': the start its backfill reservation plans';
        if (x.eta_basis === 'max_runtime')
            return when + ': an estimate, once the running jobs end by their maxRuntime (jobs ahead may start first)';
        return when;
    }

    /* Which actions to offer a job: the roles that submit, on their own
     * job; team-admins and admins on any job they see. The API decides. */
    function actions(job, who, can) {
        var none = {cancel: false, hold: false, release: false};
        if (!job || !who || !can('submit'))
            return none;
        if (job.user !== who.user && !can('manage'))
            return none;
        return {
            cancel: job.state === 'Pending' || job.state === 'Running',
            hold: job.state === 'Pending' && !job.held,
            release: job.state === 'Pending' && !!job.held
        };
    }

    /* Whether a log view should ask for more: following, and the job not
     * ended, or ended but its last answer still brought bytes. */
    function keepFollowing(state, lastBytes) {
        return !isFinal(state) || lastBytes > 0;
    }

    /* An event's words: "Pending → Running", the message. */
    function eventText(ev) {
        var parts = [];
        if (ev.type === 'state' || (ev.from && ev.to && ev.from !== ev.to))
            parts.push((ev.from || 'new') + ' \u2192 ' + ev.to);
        if (ev.message)
            parts.push(ev.message);
        return parts.join(': ');
    }

    return {FINAL: FINAL, isFinal: isFinal, blockerText: blockerText, etaText: etaText, actions: actions,
        keepFollowing: keepFollowing, eventText: eventText};
})();

if (typeof module !== 'undefined' && module.exports)
    module.exports = JobPage;

if (typeof App !== 'undefined') (function () {
    var h = Dom.h;
    var POLL_MS = 5000;
    var LOG_MS = 1500;
    var LOG_KEEP = 2 * 1024 * 1024; /* characters of log the page keeps */
    var USAGE_MS = 30000;

    function section(title, id, body) {
        return h('section', {class: 'panel', 'aria-labelledby': id}, h('h2', {id: id}, title), body);
    }

    function dur(a, b) {
        return a && b ? Fmt.duration(Math.max(0, b - a) / 1000) : null;
    }

    App.page('/jobs/:id', {
        title: 'Job',
        render: function (ctx) {
            var id = ctx.params.id;
            var job = null, etag = null, sig = null;
            var h1 = h('h1', null, 'Job ' + id);
            var head = h('div', {class: 'job-head'});
            var actionsBox = h('div', {class: 'toolbar job-actions'});
            var actionMsg = h('div', {class: 'job-action-msg'});
            var msg = h('div');
            var summary = h('div'), why = h('div'), placement = h('div'), usage = h('div'), lineage = h('div');
            var timeline = h('div'), spec = h('div');
            var whyPanel = section('Why it waits', 'job-why', why);
            whyPanel.hidden = true;
            var logPanel = h('section', {class: 'panel job-logs', 'aria-labelledby': 'job-logs-h'});
            var specPanel = section('Spec', 'job-spec-h', spec);
            ctx.main.appendChild(h('p', {class: 'crumbs'}, Dom.link('/ui/jobs', '\u2190 Jobs')));
            ctx.main.appendChild(h1);
            ctx.main.appendChild(head);
            ctx.main.appendChild(actionsBox);
            ctx.main.appendChild(actionMsg);
            ctx.main.appendChild(msg);
            var body = h('div', {class: 'job-body', hidden: true},
                h('div', {class: 'panels'},
                    whyPanel,
                    section('Summary', 'job-summary-h', summary),
                    section('Placement', 'job-placement-h', placement),
                    section('Usage', 'job-usage-h', usage),
                    section('Lineage', 'job-lineage-h', lineage),
                    section('Timeline', 'job-timeline-h', timeline)),
                logPanel, specPanel);
            ctx.main.appendChild(body);

            /* ---- the job ---------------------------------------------- */

            function renderHead() {
                document.title = 'Job ' + job.id + (job.name ? ' ' + job.name : '') + ' \u00b7 Sluice';
                h1.textContent = 'Job ' + job.id + (job.name ? ' \u00b7 ' + job.name : '');
                Dom.clear(head).appendChild(h('p', {class: 'job-state'}, Dom.badge(job.state),
                    job.held ? [' ', Dom.badge('held')] : null, job.idle ? [' ', Dom.badge('idle')] : null,
                    job.state === 'Pending' && job.reason ? h('span', {class: 'muted'}, ' ' + job.reason) : null,
                    job.message && job.state !== 'Pending' ? h('span', {class: 'muted'}, ' ' + job.message) : null));
            }

            function renderSummary() {
                var sub = Fmt.ms(job.submitted_at), st = Fmt.ms(job.started_at), fin = Fmt.ms(job.finished_at);
                var now = Date.now();
                Dom.clear(summary).appendChild(Dom.kv([
                    ['State', [Dom.badge(job.state), job.held ? [' ', Dom.badge('held')] : null]],
                    ['Team', job.team],
                    job.project ? ['Project', job.project] : null,
                    ['User', job.user],
                    ['Queue', job.queue],
                    ['Priority class', job.priority_class + (job.priority !== undefined ? ' (priority ' + job.priority + ')' : '')],
                    ['Resources', Fmt.resources(JobsList.spec(job).resources, JobsList.spec(job).tasks)],
                    ['Submitted', Fmt.time(sub)],
                    ['Started', st ? Fmt.time(st) + ' (waited ' + dur(sub, st) + ')' :
                        job.state === 'Pending' ? 'waiting for ' + dur(sub, now) : '\u2014'],
                    ['Finished', fin ? Fmt.time(fin) + (st ? ' (ran ' + dur(st, fin) + ')' : '') :
                        job.state === 'Running' && st ? 'running for ' + dur(st, now) : '\u2014'],
                    job.exit_code !== null && job.exit_code !== undefined ? ['Exit code', String(job.exit_code)] : null,
                    ['Attempt', String(job.attempt) + ' (retries ' + job.retries + ', preemptions ' + job.preemptions + ')'],
                    job.array_job_id !== null && job.array_job_id !== undefined ?
                        ['Array', [Dom.link('/ui/jobs/' + job.array_job_id, String(job.array_job_id)), ' index ' + job.array_index +
                            ' \u00b7 ', Dom.link('/ui/jobs?array=' + job.array_job_id, 'every element')]] : null,
                    job.hold ? ['Hold', (job.hold.kind === 'admin' ? 'an admin hold' : 'a user hold') + ' by ' + job.hold.by] : null,
                    job.reason && job.state !== 'Pending' ? ['Reason', job.reason] : null,
                    job.message ? ['Message', job.message] : null,
                    job.idle ? ['Idle', [Dom.badge('idle'), ' since ' + Fmt.time(Fmt.ms(job.idle.since)) +
                        (job.idle.ends_at ? ', ends ' + Fmt.time(Fmt.ms(job.idle.ends_at)) : '')]] : null,
                    job.gpus_enforced !== null && job.gpus_enforced !== undefined ?
                        ['GPU isolation', job.gpus_enforced ? 'enforced' : 'not enforced (only CUDA_VISIBLE_DEVICES)'] : null
                ]));
            }

            function renderPlacement() {
                Dom.clear(placement);
                if (!job.placement || !job.placement.length) {
                    placement.appendChild(h('p', {class: 'muted'}, job.state === 'Pending' ? 'Not placed yet.' : 'Never placed.'));
                    return;
                }
                placement.appendChild(Dom.table([
                    {key: 'task', label: 'Task', num: true},
                    {key: 'node', label: 'Node'},
                    {key: 'gpus', label: 'GPUs', render: function (p) {
                        return p.gpus && p.gpus.length ? p.gpus.join(', ') : 'none';
                    }},
                    {key: 'gpu_milli', label: 'GPU share', num: true, render: function (p) {
                        return p.gpus && p.gpus.length ? Fmt.milli(p.gpu_milli) + ' each' : '\u2014';
                    }}
                ], job.placement));
            }

            function renderSpec() {
                var asJson = spec.dataset.view === 'json';
                var pre = h('pre', {class: 'job-spec', tabindex: '0', 'aria-label': 'the job\u2019s spec'},
                    asJson ? JSON.stringify(job.spec, null, 2) : JobSpec.toYaml(job.spec));
                var yamlB = h('button', {type: 'button', 'aria-pressed': String(!asJson)}, 'YAML');
                var jsonB = h('button', {type: 'button', 'aria-pressed': String(asJson)}, 'JSON');
                yamlB.addEventListener('click', function () {
                    spec.dataset.view = 'yaml';
                    renderSpec();
                    spec.querySelector('button').focus();
                });
                jsonB.addEventListener('click', function () {
                    spec.dataset.view = 'json';
                    renderSpec();
                    spec.querySelectorAll('button')[1].focus();
                });
                Dom.clear(spec).appendChild(h('div', {class: 'toolbar'},
                    h('div', {class: 'segmented', role: 'group', 'aria-label': 'Show the spec as'}, yamlB, jsonB),
                    ctx.can('submit') ? Dom.link('/ui/submit?mode=yaml&from=' + job.id, 'Submit a copy') : null));
                spec.appendChild(pre);
            }

            /* ---- actions ------------------------------------------------ */

            var confirming = false;
            var refocus = null; /* the control to focus once an action's answer is shown */
            function renderActions() {
                var a = JobPage.actions(job, ctx.who, ctx.can);
                var focused = document.activeElement && actionsBox.contains(document.activeElement) ?
                    document.activeElement.dataset.act : refocus;
                refocus = null;
                Dom.clear(actionsBox);
                if (confirming && a.cancel) {
                    var yes = h('button', {type: 'button', class: 'danger', 'data-act': 'yes'}, 'Yes, cancel job ' + job.id);
                    var no = h('button', {type: 'button', 'data-act': 'no'}, 'Keep it');
                    yes.addEventListener('click', function () {
                        confirming = false;
                        act('cancel');
                    });
                    no.addEventListener('click', function () {
                        confirming = false;
                        renderActions();
                        var c = actionsBox.querySelector('[data-act=cancel]');
                        if (c)
                            c.focus();
                    });
                    actionsBox.appendChild(h('div', {class: 'job-confirm', role: 'group', 'aria-label': 'Confirm the cancel'},
                        h('span', null, job.state === 'Running' ? 'Cancel job ' + job.id + '? Its tasks get SIGTERM, then SIGKILL after the grace. ' :
                            'Cancel job ' + job.id + '? ', 'This cannot be undone.'), yes, no));
                    (focused === 'no' ? no : yes).focus();
                    return;
                }
                confirming = false;
                if (a.hold)
                    actionsBox.appendChild(h('button', {type: 'button', 'data-act': 'hold', onclick: function () {
                        act('hold');
                    }}, 'Hold'));
                if (a.release)
                    actionsBox.appendChild(h('button', {type: 'button', 'data-act': 'release', onclick: function () {
                        act('release');
                    }}, 'Release'));
                if (a.cancel)
                    actionsBox.appendChild(h('button', {type: 'button', class: 'danger', 'data-act': 'cancel', onclick: function () {
                        confirming = true;
                        Dom.clear(actionMsg);
                        renderActions();
                    }}, 'Cancel job\u2026'));
                if (focused) {
                    var again = actionsBox.querySelector('[data-act="' + focused + '"]') || actionsBox.querySelector('button');
                    if (!again) {
                        /* nothing left to do to the job: its state has the focus */
                        again = head.querySelector('.job-state');
                        again.setAttribute('tabindex', '-1');
                    }
                    again.focus();
                }
            }

            function act(what) {
                var p = what === 'cancel' ? Api.del('/v1/jobs/' + id) : Api.post('/v1/jobs/' + id + '/' + what);
                /* disabled buttons lose the focus: give it back where it goes next */
                refocus = {hold: 'release', release: 'hold', cancel: 'cancel'}[what];
                actionsBox.querySelectorAll('button').forEach(function (b) {
                    b.disabled = true;
                });
                Dom.clear(actionMsg);
                p.then(function (j) {
                    if (!ctx.alive())
                        return;
                    Dom.toast(what === 'cancel' ? (j.state === 'Cancelled' ? 'Job ' + id + ' cancelled' : 'Job ' + id + ' is being stopped') :
                        what === 'hold' ? 'Job ' + id + ' held' : 'Job ' + id + ' released');
                    etag = null;
                    return loadJob(true);
                }, function (e) {
                    if (!ctx.alive())
                        return;
                    actionMsg.appendChild(Dom.message(e));
                    refocus = what;
                    renderActions();
                });
            }

            /* ---- why pending -------------------------------------------- */

            var whyTag = null; /* the explanation's ETag: a 304 leaves the panel as it is */
            function loadWhy() {
                if (!job || job.state !== 'Pending') {
                    whyPanel.hidden = true;
                    whyTag = null;
                    return Promise.resolve();
                }
                return Api.get('/v1/jobs/' + id + '/explain', null, {etag: whyTag || ''}).then(function (x) {
                    if (!ctx.alive() || !job || job.state !== 'Pending' || x.notModified)
                        return;
                    whyTag = x._etag || null;
                    whyPanel.hidden = false;
                    Dom.clear(why);
                    why.appendChild(h('p', {class: 'job-why-summary'}, h('strong', null, x.summary || '')));
                    why.appendChild(Dom.kv([
                        ['Position', x.position ? x.position + ' of ' + (x.queue_pending || x.position) + ' pending in queue ' + x.queue : '\u2014'],
                        ['ETA', JobPage.etaText(x)],
                        x.held ? ['Held', 'not scheduled until released'] : null,
                        x.request ? ['Asks for', (x.request.tasks > 1 ? x.request.tasks + ' tasks, ' : '') + (x.request.per_task || '')] : null,
                        x.queue_share !== undefined ? ['Shares', 'queue ' + Fmt.pct(x.queue_share) + ', user ' + Fmt.pct(x.user_share)] : null
                    ]));
                    why.appendChild(h('h3', null, 'Blockers'));
                    if ((x.blockers || []).length) {
                        why.appendChild(h('ul', {class: 'job-blockers'}, x.blockers.map(function (b) {
                            var t = JobPage.blockerText(b);
                            return h('li', {'data-kind': b.kind}, h('strong', null, t.title), t.text ? ': ' + t.text : '');
                        })));
                    } else {
                        why.appendChild(h('p', {class: 'muted'}, x.held || job.held ? 'None but the hold: it runs once released.' :
                            'None now: it waits for the next scheduling pass.'));
                    }
                    if ((x.would_run_if || []).length) {
                        why.appendChild(h('h3', null, 'It would run if'));
                        why.appendChild(h('ul', null, x.would_run_if.map(function (w) {
                            return h('li', null, w);
                        })));
                    }
                }, function (e) {
                    if (ctx.alive())
                        Dom.clear(why).appendChild(Dom.message(e));
                });
            }

            /* ---- timeline ----------------------------------------------- */

            function loadEvents() {
                return Api.get('/v1/jobs/' + id + '/events').then(function (r) {
                    if (!ctx.alive())
                        return;
                    var evs = r.events || [];
                    Dom.clear(timeline).appendChild(evs.length ? h('ol', {class: 'job-timeline'}, evs.map(function (ev) {
                        return h('li', null,
                            h('time', {datetime: ev.at}, Fmt.time(Fmt.ms(ev.at))), ' ',
                            ev.type === 'state' ? Dom.badge(ev.to) : h('span', {class: 'job-ev-type'}, ev.type),
                            ' ', h('span', null, ev.type === 'state' ? (ev.from ? 'from ' + ev.from : 'submitted') +
                                (ev.message ? ': ' + ev.message : '') : JobPage.eventText(ev)));
                    })) : h('p', {class: 'muted'}, 'No events.'));
                }, function (e) {
                    if (ctx.alive())
                        Dom.clear(timeline).appendChild(Dom.message(e));
                });
            }

            /* ---- usage and lineage -------------------------------------- */

            var usageAt = 0;
            var models = null;
            function loadLineage() {
                usageAt = Date.now();
                var mp = models ? Promise.resolve(models) : Api.get('/v1/models').then(function (r) {
                    models = (r.models || []).filter(function (m) {
                        return String(m.job) === String(id);
                    });
                    return models;
                }, function () {
                    return [];
                });
                return Promise.all([Api.get('/v1/lineage/job:' + id), mp]).then(function (a) {
                    if (!ctx.alive())
                        return;
                    var lj = a[0].job || {};
                    var u = lj.usage || {};
                    var ms = lj.models || a[1];
                    Dom.clear(usage);
                    if (!lj.started_at) {
                        usage.appendChild(h('p', {class: 'muted'}, 'Nothing used: the job has not run.'));
                    } else usage.appendChild(Dom.kv([
                        ['GPU-hours', Fmt.num(u.gpu_hours, 3)],
                        ['Compute units', Fmt.num(u.cu, 3)],
                        ['Energy', [Fmt.kwh(u.energy_kwh), ' ', Dom.badge(u.energy_measured ? 'measured' : 'estimated',
                            u.energy_measured ? 'ok' : 'estimated')]],
                        ['Cost', Fmt.money(u.cost, u.currency)],
                        ['CO\u2082', Fmt.co2(u.co2_kg)],
                        ['Idle but allocated', job && job.idle ? [Dom.badge('idle'), ' since ' + Fmt.time(Fmt.ms(job.idle.since))] :
                            job && job.state === 'Running' ? 'no' : 'not running']
                    ]));
                    if (job && job.state === 'Running')
                        usage.appendChild(h('p', {class: 'muted'}, 'So far; updated every 30 s while the job lives.'));
                    Dom.clear(lineage).appendChild(Dom.kv([
                        ['Image', lj.image ? h('code', null, lj.image) : 'none given'],
                        ['Code', lj.code ? h('span', null, h('code', null, lj.code.repo || ''), ' @ ',
                            h('code', null, lj.code.commit || '')) : 'none given'],
                        ['Datasets', (lj.datasets || []).length ? h('ul', {class: 'plain'}, lj.datasets.map(function (d) {
                            return h('li', null, h('code', null, typeof d === 'string' ? d : (d.name || '') +
                                (d.version ? '@' + d.version : '') + (d.mode ? ' (' + d.mode + ')' : '')));
                        })) : 'none'],
                        ['Models from it', ms.length ? h('ul', {class: 'plain'}, ms.map(function (m) {
                            var ref = m.name + '@' + m.version;
                            return h('li', null, Dom.link(ModelLineage.refHref(ref), ref),
                                m.stage && m.stage !== 'none' ? [' ', Dom.badge(m.stage, 'info')] : null);
                        })) : 'none registered']
                    ]));
                }, function (e) {
                    if (!ctx.alive())
                        return;
                    Dom.clear(usage).appendChild(Dom.message(e));
                    Dom.clear(lineage);
                });
            }

            /* ---- the job, polled ---------------------------------------- */

            var loading = null;
            function loadJob(force) {
                if (loading && !force)
                    return loading;
                var p = Api.get('/v1/jobs/' + id, null, {etag: etag || ''}).then(function (j) {
                    if (!ctx.alive())
                        return;
                    Dom.clear(msg);
                    if (j.notModified) {
                        return job && job.state === 'Pending' ? loadWhy() : null;
                    }
                    etag = j._etag || null;
                    var s = JSON.stringify(j);
                    if (s === sig)
                        return job.state === 'Pending' ? loadWhy() : null;
                    var before = job;
                    job = j;
                    sig = s;
                    body.hidden = false;
                    renderHead();
                    renderSummary();
                    renderActions();
                    renderPlacement();
                    if (!before)
                        renderSpec();
                    var waits = [loadWhy()];
                    if (!before || before.state !== j.state || before.attempt !== j.attempt || before.held !== j.held ||
                        before.queue !== j.queue || before.priority_class !== j.priority_class)
                        waits.push(loadEvents());
                    if (!before || before.state !== j.state || (j.state === 'Running' && Date.now() - usageAt > USAGE_MS))
                        waits.push(loadLineage());
                    if (!before || before.attempt !== j.attempt)
                        waits.push(logs.attempts());
                    logs.jobChanged();
                    return Promise.all(waits);
                }, function (e) {
                    if (!ctx.alive())
                        return;
                    Dom.clear(msg).appendChild(Dom.message(e));
                    if (!job && (e.status === 404 || e.status === 403)) {
                        h1.textContent = 'Job ' + id + ': ' + (e.status === 404 ? 'not found' : 'not allowed');
                        document.title = h1.textContent + ' \u00b7 Sluice';
                        msg.appendChild(h('p', null, Dom.link('/ui/jobs', 'Back to the jobs')));
                        stopped = true;
                    }
                });
                loading = p.then(function () {
                    loading = null;
                });
                return loading;
            }

            /* ---- logs --------------------------------------------------- */

            var logs = (function () {
                var task = 0, attempt = '', offset = 0, follow = true, lastBytes = 0, decoder = null, busy = false;
                var gen = 0; /* a selector change starts a new generation: late answers are dropped */
                var nAttempts = 0;
                var pre = h('pre', {class: 'log', tabindex: '0', 'aria-label': 'the log', 'aria-live': 'off'});
                var note = h('p', {class: 'muted job-log-note'});
                var taskSel = h('select', {id: 'job-log-task'});
                var attSel = h('select', {id: 'job-log-attempt'});
                var followBox = h('input', {type: 'checkbox', id: 'job-log-follow', checked: true});
                var followLabel = h('label', {class: 'job-follow'}, followBox, ' Follow');
                var taskField = h('div', {class: 'field'}, h('label', {for: 'job-log-task'}, 'Task'), taskSel);
                var attField = h('div', {class: 'field'}, h('label', {for: 'job-log-attempt'}, 'Attempt'), attSel);
                var dl = h('button', {type: 'button'}, 'Download');
                taskField.hidden = true;
                attField.hidden = true;
                logPanel.appendChild(h('h2', {id: 'job-logs-h'}, 'Logs'));
                logPanel.appendChild(h('div', {class: 'filters job-log-controls'}, taskField, attField,
                    followLabel, dl));
                logPanel.appendChild(note);
                logPanel.appendChild(pre);

                function restart() {
                    gen++;
                    offset = 0;
                    lastBytes = 0;
                    decoder = new TextDecoder('utf-8');
                    Dom.clear(pre);
                    busy = false;
                    return fetchMore();
                }
                taskSel.addEventListener('change', function () {
                    task = parseInt(taskSel.value, 10) || 0;
                    restart();
                });
                attSel.addEventListener('change', function () {
                    attempt = attSel.value;
                    restart();
                });
                followBox.addEventListener('change', function () {
                    follow = followBox.checked;
                    if (follow) {
                        pre.scrollTop = pre.scrollHeight;
                        fetchMore();
                    }
                });
                /* The whole log of the task (and attempt), 1 MiB a request. */
                dl.addEventListener('click', function () {
                    var parts = [];
                    var name = 'job-' + id + '-task-' + task + (attempt !== '' ? '-attempt-' + attempt : '') + '.log';
                    function page(off) {
                        var params = {task: task, offset: off, attempt: attempt};
                        return Api.request('/v1/jobs/' + id + '/logs', {params: params, as: 'response'}).then(function (res) {
                            return res.arrayBuffer().then(function (buf) {
                                parts.push(buf);
                                var next = parseInt(res.headers.get('X-Sluice-Log-Offset'), 10);
                                if (buf.byteLength >= 1048576 && isFinite(next) && next > off)
                                    return page(next);
                                return Api.save(new Blob(parts, {type: 'text/plain'}), name);
                            });
                        });
                    }
                    dl.disabled = true;
                    page(0).catch(function (e) {
                        note.textContent = '';
                        note.appendChild(Dom.message(e));
                    }).then(function () {
                        dl.disabled = false;
                    });
                });

                function append(text) {
                    if (!text)
                        return;
                    var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
                    var empty = pre.querySelector('.job-log-empty');
                    if (empty)
                        empty.remove();
                    pre.appendChild(document.createTextNode(text));
                    if (pre.textContent.length > LOG_KEEP) {
                        var all = pre.textContent;
                        pre.textContent = all.slice(all.length - LOG_KEEP);
                        note.textContent = 'Only the last ' + Fmt.bytes(LOG_KEEP) + ' of characters are shown: download the whole log.';
                    }
                    if (atBottom && follow)
                        pre.scrollTop = pre.scrollHeight;
                }

                /* Ask for what follows `offset`; again at once while a
                 * full page (1 MiB) came back. */
                function fetchMore() {
                    if (busy || !job)
                        return Promise.resolve();
                    busy = true;
                    var mine = gen;
                    var params = {task: task, offset: offset};
                    if (attempt !== '')
                        params.attempt = attempt;
                    return Api.request('/v1/jobs/' + id + '/logs', {params: params, as: 'response'}).then(function (res) {
                        return res.arrayBuffer().then(function (buf) {
                            if (!ctx.alive() || mine !== gen)
                                return;
                            var next = parseInt(res.headers.get('X-Sluice-Log-Offset'), 10);
                            var state = res.headers.get('X-Sluice-Job-State');
                            lastBytes = buf.byteLength;
                            offset = isFinite(next) ? next : offset + buf.byteLength;
                            append(decoder.decode(new Uint8Array(buf), {stream: true}));
                            if (!pre.firstChild)
                                pre.appendChild(h('span', {class: 'muted job-log-empty'},
                                    job.state === 'Pending' ? 'No output yet: the job has not started.' : 'No output.'));
                            busy = false;
                            if (state && job && state !== job.state)
                                loadJob(true);
                            if (buf.byteLength >= 1048576)
                                return fetchMore();
                        });
                    }, function (e) {
                        busy = false;
                        if (!ctx.alive() || mine !== gen)
                            return;
                        if (e.status === 400 && e.field === 'attempt') {
                            note.textContent = e.message;
                            return;
                        }
                        Dom.clear(pre).appendChild(Dom.message(e));
                    });
                }

                function fillTasks() {
                    var n = Math.max(1, (JobsList.spec(job).tasks) || 1);
                    if (taskSel.options.length === n)
                        return;
                    Dom.clear(taskSel);
                    for (var i = 0; i < n; i++)
                        taskSel.appendChild(h('option', {value: String(i)}, 'task ' + i));
                    taskSel.value = String(task);
                    taskField.hidden = n < 2;
                }

                return {
                    /* the attempts, for the selector */
                    attempts: function () {
                        return Api.get('/v1/jobs/' + id + '/attempts').then(function (r) {
                            if (!ctx.alive())
                                return;
                            var list = r.attempts || [];
                            if (list.length === nAttempts)
                                return;
                            nAttempts = list.length;
                            Dom.clear(attSel).appendChild(h('option', {value: ''}, 'all attempts'));
                            list.forEach(function (a) {
                                attSel.appendChild(h('option', {value: String(a.attempt)}, 'attempt ' + a.attempt +
                                    ' (' + JobsList.shortTime(Fmt.ms(a.started_at)) + (a.after ? ', after ' + a.after : '') + ')'));
                            });
                            attSel.value = attempt;
                            attField.hidden = list.length < 2;
                        }, function () { /* the selector stays as it is */ });
                    },
                    jobChanged: function () {
                        fillTasks();
                        if (JobPage.isFinal(job.state) && !followLabel.hidden) {
                            followLabel.hidden = true;
                            note.textContent = 'The job has ended: this is all of its output.';
                        } else if (!JobPage.isFinal(job.state)) {
                            note.textContent = '';
                        }
                        if (!decoder)
                            restart();
                    },
                    tick: function () {
                        if (!job || !follow || busy)
                            return Promise.resolve();
                        if (!JobPage.keepFollowing(job.state, lastBytes) || job.state === 'Pending')
                            return Promise.resolve();
                        return fetchMore();
                    }
                };
            })();

            var stopped = false;
            ctx.every(POLL_MS, function () {
                if (stopped || (job && JobPage.isFinal(job.state)))
                    return null;
                return loadJob(false);
            });
            ctx.every(LOG_MS, function () {
                return logs.tick();
            });
        }
    });
})();
