/*
 * 46-cost.js - the Teams and cost page (/ui/cost): usage, compute units,
 * energy, cost and carbon per team, project, user, queue, GPU model or node
 * and per day, week or month (GET /v1/report), the budgets with a burn-up
 * of each over its period (GET /v1/budgets, and one GET /v1/report by team
 * and day from the earliest budget period's start), and the cluster's
 * utilisation (GET /v1/report/utilisation).
 *
 * The report's parameters live in the URL (?by=&period=&from=&to=&team=
 * &share_idle=&metric=&sort=): a change pushes a history entry. The CSV
 * button downloads what sluiced sends for the same parameters with
 * format=csv: the bytes of `sluice report ... -o csv`, which the page also
 * shows as a command line. The team selector is offered only to the roles
 * that see every team (admin, auditor); the API answers a member or viewer
 * with its own team's rows whatever is asked.
 *
 * CostReport (pure, loaded by node's test runner too): the URL's query ->
 * the report's parameters, the equivalent command line, totals, the series
 * per period, the budgets' units, action words and burn-up series.
 */
'use strict';

var CostReport = (function () {
    var F = typeof Fmt !== 'undefined' ? Fmt : require('./00-format.js');

    var BYS = ['team', 'project', 'user', 'queue', 'gpu-model', 'node'];
    var PERIODS = ['day', 'week', 'month', 'none'];
    var DAY = 86400e3;

    /* The figures of a report row the page shows, sums and charts: field,
     * label, and how to write a value (currency for money). */
    var METRICS = [
        {key: 'gpu_hours', label: 'GPU-hours', short: 'GPU-h', fmt: function (v) {
            return figure(v, 3);
        }},
        {key: 'cu', label: 'Compute units', short: 'CU', fmt: function (v) {
            return figure(v, 2);
        }},
        {key: 'energy_kwh', label: 'Energy', short: 'kWh', fmt: function (v) {
            return kwh(v);
        }},
        {key: 'cost', label: 'Cost', short: 'Cost', money: true, fmt: function (v, cur) {
            return F.money(v, cur);
        }},
        {key: 'co2_kg', label: 'Carbon', short: 'CO\u2082e', fmt: function (v) {
            return F.co2(v);
        }}
    ];
    var SUMMED = ['jobs', 'gpu_hours', 'unused_gpu_hours', 'idle_jobs', 'cu', 'core_hours',
        'gib_hours', 'energy_kwh', 'energy_measured_kwh', 'cost', 'idle_cost_share', 'chargeback',
        'co2_kg'];

    /* A figure with `digits` decimals, but one that would round to 0
     * while it is not keeps two significant digits: 0.00083, not 0. */
    function figure(v, digits) {
        if (typeof v === 'number' && isFinite(v) && v !== 0 && Math.abs(v) < 0.5 * Math.pow(10, -digits))
            return F.num(Number(v.toPrecision(2)), 20);
        return F.num(v, digits);
    }

    function kwh(v) {
        return v === null || v === undefined ? F.kwh(v) : figure(v, 3) + '\u00a0kWh';
    }

    function metric(key) {
        for (var i = 0; i < METRICS.length; i++) {
            if (METRICS[i].key === key)
                return METRICS[i];
        }
        return METRICS[0];
    }

    /* A URL query's value, trimmed; "" when absent. */
    function getter(query) {
        return function (k) {
            return (query.get(k) || '').trim();
        };
    }

    /* The page's state of a URL query (URLSearchParams):
     * by (default team), period (default day; "none" for one row per key),
     * from, to and team as given (the API reads dates, RFC 3339 and epoch
     * ms; empty = its defaults, the month so far), share_idle (chargeback),
     * the charted metric and the table's sort. */
    function parse(query) {
        var get = getter(query);
        var by = get('by'), period = get('period'), m = get('metric'), sort = get('sort');
        return {
            by: BYS.indexOf(by) >= 0 ? by : 'team',
            period: PERIODS.indexOf(period) >= 0 ? period : 'day',
            from: get('from'),
            to: get('to'),
            team: get('team'),
            share_idle: get('share_idle') === 'true',
            metric: metric(m).key,
            sort: /^-?[a-z_]+$/.test(sort) ? sort : ''
        };
    }

    /* The URL query of a state: only what differs from the defaults. */
    function toQuery(st) {
        var q = {};
        if (st.by !== 'team')
            q.by = st.by;
        if (st.period !== 'day')
            q.period = st.period;
        ['from', 'to', 'team', 'sort'].forEach(function (k) {
            if (st[k])
                q[k] = st[k];
        });
        if (st.share_idle)
            q.share_idle = 'true';
        if (st.metric !== 'gpu_hours')
            q.metric = st.metric;
        return q;
    }

    /* GET /v1/report's parameters for a state; `format` "csv" for the
     * download. The same for the table and the CSV but that one member. */
    function apiParams(st, format) {
        var p = {by: st.by};
        if (st.from)
            p.from = st.from;
        if (st.to)
            p.to = st.to;
        if (st.period !== 'none')
            p.period = st.period;
        if (st.team)
            p.team = st.team;
        if (st.share_idle)
            p.share_idle = 'true';
        if (format)
            p.format = format;
        return p;
    }

    /* A word as a POSIX shell reads it: bare when it is safe, else quoted. */
    function shellWord(s) {
        s = String(s);
        return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
    }

    /* The `sluice report` command that prints the same CSV as the page's
     * download (docs/cli.md: --by, --from, --to, --period, --team,
     * --chargeback). */
    function command(st) {
        var a = ['sluice', 'report', '--by', st.by];
        if (st.from)
            a.push('--from', st.from);
        if (st.to)
            a.push('--to', st.to);
        if (st.period !== 'none')
            a.push('--period', st.period);
        if (st.team)
            a.push('--team', st.team);
        if (st.share_idle)
            a.push('--chargeback');
        a.push('-o', 'csv');
        return a.map(shellWord).join(' ');
    }

    /* The `sluice report --utilisation` command of the same window. */
    function utilCommand(st) {
        var a = ['sluice', 'report', '--utilisation'];
        if (st.from)
            a.push('--from', st.from);
        if (st.to)
            a.push('--to', st.to);
        a.push('-o', 'csv');
        return a.map(shellWord).join(' ');
    }

    /* The sums of a report's rows. Jobs are summed only without periods:
     * a job that runs over several periods is in each (null then).
     * energy_measured: true when every row's is, false when none, null
     * when some. */
    function totals(rows, byPeriod) {
        var t = {rows: rows.length};
        SUMMED.forEach(function (k) {
            var any = false, s = 0;
            rows.forEach(function (r) {
                if (typeof r[k] === 'number') {
                    s += r[k];
                    any = true;
                }
            });
            t[k] = any ? s : null;
        });
        if (byPeriod) {
            t.jobs = null;
            t.idle_jobs = null;
        }
        var measured = rows.filter(function (r) {
            return r.energy_measured;
        }).length;
        t.energy_measured = !rows.length ? null : measured === rows.length ? true : measured === 0 ? false : null;
        t.currency = rows.length ? rows[0].currency : '';
        return t;
    }

    /* Each key's sum of `field` over the rows, largest first:
     * [{key, value}]. */
    function byKey(rows, field) {
        var sums = {};
        var order = [];
        rows.forEach(function (r) {
            if (!Object.prototype.hasOwnProperty.call(sums, r.key)) {
                sums[r.key] = 0;
                order.push(r.key);
            }
            sums[r.key] += typeof r[field] === 'number' ? r[field] : 0;
        });
        return order.map(function (k) {
            return {key: k, value: sums[k]};
        }).sort(function (a, b) {
            return b.value - a.value || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
        });
    }

    /* The chart of `field` per period: {t: [period starts, ms, ascending],
     * series: [{label, values}]} with one series per key, the largest
     * `max` - 1 keys by their sum and the rest as "other" when there are
     * more than `max`. A key without a row in a period used nothing then:
     * 0, not a gap. */
    function periodSeries(rows, field, max) {
        max = max || 6;
        var ts = [];
        var seen = {};
        rows.forEach(function (r) {
            var t = F.ms(r.period);
            if (t !== null && !seen[t]) {
                seen[t] = true;
                ts.push(t);
            }
        });
        ts.sort(function (a, b) {
            return a - b;
        });
        var keys = byKey(rows, field).map(function (k) {
            return k.key;
        });
        var shown = keys.length > max ? keys.slice(0, max - 1) : keys;
        var other = keys.length > max;
        var idx = {};
        ts.forEach(function (t, i) {
            idx[t] = i;
        });
        var series = shown.map(function (k) {
            return {label: k === '' ? '(none)' : k, key: k, values: ts.map(function () {
                return 0;
            })};
        });
        var otherS = other ? {label: 'other (' + (keys.length - shown.length) + ')', key: null,
            values: ts.map(function () {
                return 0;
            })} : null;
        var pos = {};
        shown.forEach(function (k, i) {
            pos[k] = i;
        });
        rows.forEach(function (r) {
            var t = F.ms(r.period);
            if (t === null)
                return;
            var s = Object.prototype.hasOwnProperty.call(pos, r.key) ? series[pos[r.key]] : otherS;
            if (s)
                s.values[idx[t]] += typeof r[field] === 'number' ? r[field] : 0;
        });
        if (otherS)
            series.push(otherS);
        return {t: ts, series: series};
    }

    /* A period's start (RFC 3339) as the period names it: a day
     * "2026-12-01", a week "week of 2026-11-30", a month "2026-12". */
    function periodLabel(iso, period) {
        var t = F.ms(iso);
        if (t === null)
            return iso || '';
        var d = F.day(t);
        if (period === 'month')
            return d.slice(0, 7);
        if (period === 'week')
            return 'week of ' + d;
        return d;
    }

    /* Rows sorted by `sort` ("cost" or "-cost"; "" keeps the API's order,
     * period then key); numbers numerically, text by its characters. */
    function sortRows(rows, sort) {
        if (!sort)
            return rows.slice();
        var desc = sort.charAt(0) === '-';
        var k = desc ? sort.slice(1) : sort;
        return rows.map(function (r, i) {
            return {r: r, i: i};
        }).sort(function (a, b) {
            var x = a.r[k], y = b.r[k], c;
            if (typeof x === 'number' && typeof y === 'number')
                c = x - y;
            else
                c = String(x === null || x === undefined ? '' : x) < String(y === null || y === undefined ? '' : y) ? -1 :
                    String(x === null || x === undefined ? '' : x) > String(y === null || y === undefined ? '' : y) ? 1 : 0;
            return (desc ? -c : c) || a.i - b.i;
        }).map(function (o) {
            return o.r;
        });
    }

    /* A budget's unit (GET /v1/budgets' `unit`, docs/metering.md): the
     * report row's field that measures it and how to write it. */
    function budgetUnit(unit, currency) {
        if (unit === 'cost')
            return {field: 'cost', label: currency || 'cost', fmt: function (v) {
                return F.money(v, currency);
            }};
        if (unit === 'cu')
            return {field: 'cu', label: 'CU', fmt: function (v) {
                return figure(v, 2) + '\u00a0CU';
            }};
        return {field: 'gpu_hours', label: 'GPU-hours', fmt: function (v) {
            return figure(v, 2) + '\u00a0GPU-h';
        }};
    }

    /* What a budget does at its marks, in docs/metering.md's words. */
    function actionWords(action, team) {
        var at100 = action === 'block' ?
            'new submissions of team ' + team + ' are refused (403 budget_exceeded) until the period resets' :
            action === 'demote' ?
                'new submissions of team ' + team + ' are admitted as best-effort (the lowest preemptible class)' :
                'action ' + action;
        return {
            at80: 'a warning event is recorded and logged',
            at100: at100 + '; running jobs are not touched'
        };
    }

    /* The short form of the action: "at 100 %: block new jobs". */
    function actionShort(action) {
        return action === 'block' ? 'at 100\u00a0%: block new jobs' :
            action === 'demote' ? 'at 100\u00a0%: demote new jobs to best-effort' : 'at 100\u00a0%: ' + action;
    }

    /* The burn-up of a budget: its use summed day by day over its period
     * from the report's rows by team and day (those of the budget's team
     * in the period), against its limit. Points: the period's start (0),
     * each day's end up to now, now, then the rest of the period's days
     * with no use (null), so that the axis spans the whole period.
     * {t, used, limit, warn, total, projected (linear to the period's end;
     * null once it is over or before it starts), unit}. */
    function burnSeries(budget, rows, now, currency) {
        var unit = budgetUnit(budget.unit, currency);
        var start = F.ms(budget.period_start), end = F.ms(budget.period_end);
        var per = {};
        (rows || []).forEach(function (r) {
            var t = F.ms(r.period);
            if (r.key !== budget.team || t === null || t < start || t >= end)
                return;
            per[t] = (per[t] || 0) + (typeof r[unit.field] === 'number' ? r[unit.field] : 0);
        });
        var t = [start], used = [0], sum = 0;
        for (var d = start; d < end; d += DAY) {
            var dayEnd = Math.min(d + DAY, end);
            if (d < now) {
                sum += per[d] || 0;
                t.push(Math.min(dayEnd, now));
                used.push(sum);
            } else {
                t.push(dayEnd);
                used.push(null);
            }
        }
        var limit = budget.limit;
        var projected = null;
        if (now > start && now < end)
            projected = sum / (now - start) * (end - start);
        return {
            t: t,
            used: used,
            limit: t.map(function () {
                return limit;
            }),
            warn: t.map(function () {
                return limit * 0.8;
            }),
            total: sum,
            projected: projected,
            unit: unit
        };
    }

    /* The earliest start among budgets (RFC 3339 as given), "" for none:
     * the one report by team and day that all burn-ups read. */
    function earliestStart(budgets) {
        var best = null, s = '';
        (budgets || []).forEach(function (b) {
            var t = F.ms(b.period_start);
            if (t !== null && (best === null || t < best)) {
                best = t;
                s = b.period_start;
            }
        });
        return s;
    }

    /* The budgets to show: those of `team` when one is picked. */
    function budgetsOf(budgets, team) {
        return (budgets || []).filter(function (b) {
            return !team || b.team === team;
        });
    }

    /* A budget's state in words: exceeded, past 80 %, or within. */
    function budgetState(b) {
        if (b.exceeded || b.percent >= 100)
            return {text: 'exceeded', kind: 'bad'};
        if (b.percent >= 80)
            return {text: 'over 80\u00a0%', kind: 'warn'};
        return {text: 'within', kind: 'ok'};
    }

    /* Handy report windows ending now, as the report's dates (UTC). */
    function quickRanges(now) {
        var d = new Date(now);
        var y = d.getUTCFullYear(), m = d.getUTCMonth(), dd = d.getUTCDate();
        var today = Date.UTC(y, m, dd);
        return [
            {id: 'month', label: 'This month', from: F.day(Date.UTC(y, m, 1)), to: ''},
            {id: 'last-month', label: 'Last month', from: F.day(Date.UTC(y, m - 1, 1)), to: F.day(Date.UTC(y, m, 1))},
            {id: '7d', label: 'Last 7 days', from: F.day(today - 6 * DAY), to: ''},
            {id: '30d', label: 'Last 30 days', from: F.day(today - 29 * DAY), to: ''},
            {id: 'year', label: 'This year', from: F.day(Date.UTC(y, 0, 1)), to: ''}
        ];
    }

    return {
        BYS: BYS, PERIODS: PERIODS, METRICS: METRICS, figure: figure, kwh: kwh, metric: metric, parse: parse,
        toQuery: toQuery, apiParams: apiParams, command: command, utilCommand: utilCommand,
        shellWord: shellWord,
        totals: totals, byKey: byKey, periodSeries: periodSeries, periodLabel: periodLabel,
        sortRows: sortRows, budgetUnit: budgetUnit, actionWords: actionWords,
        actionShort: actionShort, burnSeries: burnSeries, earliestStart: earliestStart, budgetsOf: budgetsOf,
        budgetState: budgetState, quickRanges: quickRanges
    };
})();

if (typeof App !== 'undefined') {
    (function () {
        var h = Dom.h;
        var R = CostReport;
        var ROWS_PER_PAGE = 100;
        var BY_LABEL = {team: 'Team', project: 'Project', user: 'User', queue: 'Queue',
            'gpu-model': 'GPU model', node: 'Node'};
        /* the same in a sentence */
        var BY_WORD = {team: 'team', project: 'project', user: 'user', queue: 'queue',
            'gpu-model': 'GPU model', node: 'node'};
        var PERIOD_LABEL = {day: 'Day', week: 'Week', month: 'Month', none: 'Whole range'};

        /* A date field: a date picker for a plain date (or nothing), a text
         * field for anything else the API reads (RFC 3339, epoch ms). */
        function dateField(name, label, value, hint) {
            var plain = !value || /^\d{4}-\d{2}-\d{2}$/.test(value);
            return Dom.field({label: label, name: name, type: plain ? 'date' : 'text', value: value,
                hint: hint});
        }

        function keyText(k) {
            return k === '' || k === null || k === undefined ? '(none)' : k;
        }

        function measuredBadge(v) {
            return v === true ? Dom.badge('measured', 'ok') : v === false ? Dom.badge('estimated') :
                Dom.badge('partly measured', 'warn');
        }

        /* The table's columns for a report of `st`. */
        function columns(st, report) {
            var cur = report.currency;
            var cols = [{key: 'key', label: BY_LABEL[st.by] || st.by, sort: true, render: function (r) {
                return r._total ? h('strong', null, 'Total') : keyText(r.key);
            }}];
            if (st.period !== 'none') {
                cols.push({key: 'period', label: 'Period', sort: true, render: function (r) {
                    return r._total ? '' : R.periodLabel(r.period, st.period);
                }});
            }
            function n(key, label, fmt) {
                cols.push({key: key, label: label, sort: true, num: true, render: function (r) {
                    return r[key] === null || r[key] === undefined ? '\u2014' : fmt(r[key]);
                }});
            }
            n('jobs', 'Jobs', Fmt.int);
            n('gpu_hours', 'GPU-h', function (v) {
                return R.figure(v, 3);
            });
            n('unused_gpu_hours', 'Unused GPU-h', function (v) {
                return R.figure(v, 3);
            });
            n('idle_jobs', 'Idle jobs', Fmt.int);
            n('cu', 'CU', function (v) {
                return R.figure(v, 2);
            });
            n('core_hours', 'Core-h', function (v) {
                return R.figure(v, 2);
            });
            n('gib_hours', 'GiB-h', function (v) {
                return R.figure(v, 2);
            });
            n('energy_kwh', 'Energy', R.kwh);
            cols.push({key: 'energy_measured', label: 'Energy is', render: function (r) {
                return measuredBadge(r.energy_measured);
            }});
            n('cost', 'Cost', function (v) {
                return Fmt.money(v, cur);
            });
            if (report.chargeback) {
                n('idle_cost_share', 'Idle share', function (v) {
                    return Fmt.money(v, cur);
                });
                n('chargeback', 'Chargeback', function (v) {
                    return Fmt.money(v, cur);
                });
            }
            n('co2_kg', 'CO\u2082e', Fmt.co2);
            return cols;
        }

        function card(label, value, sub) {
            return h('div', {class: 'card'}, h('div', {class: 'label'}, label),
                h('div', {class: 'value'}, value), sub ? h('div', {class: 'sub'}, sub) : null);
        }

        function summary(report, t, st) {
            var cur = report.currency;
            return h('div', {class: 'cards', role: 'group', 'aria-label': 'Totals of the report'},
                card('GPU-hours', R.figure(t.gpu_hours || 0, 2),
                    t.unused_gpu_hours ? R.figure(t.unused_gpu_hours, 2) + ' unused (idle but allocated)' : null),
                card('Compute units', R.figure(t.cu || 0, 2)),
                card('Energy', R.kwh(t.energy_kwh || 0),
                    t.energy_measured === true ? 'measured' : t.energy_measured === false ? 'estimated' :
                        R.kwh(t.energy_measured_kwh || 0) + ' measured'),
                card(report.chargeback ? 'Chargeback' : 'Cost',
                    Fmt.money((report.chargeback ? t.chargeback : t.cost) || 0, cur),
                    report.chargeback ? 'incl. ' + Fmt.money(t.idle_cost_share || 0, cur) + ' idle share' : 'showback'),
                card('Carbon', Fmt.co2(t.co2_kg || 0), 'CO\u2082e'),
                st.period === 'none' ? card('Jobs', Fmt.int(t.jobs || 0)) : null);
        }

        /* Each key's share of the charted figure, as meters with the
         * figure beside each. */
        function shares(rows, m, cur, by) {
            var list = R.byKey(rows, m.key);
            var total = list.reduce(function (s, x) {
                return s + x.value;
            }, 0);
            var top = list.slice(0, 12);
            var ul = h('ul', {class: 'cost-shares', 'aria-label': m.label + ' by ' + BY_WORD[by]});
            top.forEach(function (x) {
                var text = m.fmt(x.value, cur) + (total > 0 ? ' (' + Fmt.pct(x.value / total) + ')' : '');
                ul.appendChild(h('li', null, h('span', {class: 'cost-share-key'}, keyText(x.key)),
                    Dom.meter(x.value, total || 1, text, {label: keyText(x.key) + ': ' + text})));
            });
            if (list.length > top.length)
                ul.appendChild(h('li', {class: 'muted'}, (list.length - top.length) + ' more in the table below'));
            return ul;
        }

        function metricPicker(st, onPick) {
            return h('div', {class: 'segmented', role: 'group', 'aria-label': 'Figure to chart'},
                R.METRICS.map(function (m) {
                    return h('button', {type: 'button', 'aria-pressed': m.key === st.metric ? 'true' : 'false',
                        onclick: function () {
                            onPick(m.key);
                        }}, m.label);
                }));
        }

        function utilisationPanel(u) {
            var t = u.total;
            var cur = u.currency;
            var wrap = h('div');
            if (Fmt.ms(u.from) >= Fmt.ms(u.to)) {
                wrap.appendChild(h('p', null, 'The meter started at ' + Fmt.time(Fmt.ms(u.from), true) +
                    ' UTC, after this range ends: there is no utilisation to show for it.'));
                return wrap;
            }
            wrap.appendChild(h('p', {class: 'muted'}, 'From ' + Fmt.time(Fmt.ms(u.from), true) + ' to ' +
                Fmt.time(Fmt.ms(u.to), true) + ' UTC (clipped to when the meter started).'));
            wrap.appendChild(h('div', {class: 'cards'},
                card('Utilisation', Fmt.pct(t.utilisation), 'allocated of capacity'),
                card('Allocated', R.figure(t.allocated_gpu_hours, 2) + ' GPU-h',
                    'of ' + R.figure(t.capacity_gpu_hours, 2) + ' GPU-h capacity'),
                card('Idle (unallocated)', R.figure(t.idle_gpu_hours, 2) + ' GPU-h', Fmt.money(t.idle_cost, cur)),
                card('Allocated but unused', R.figure(t.allocated_unused_gpu_hours, 2) + ' GPU-h',
                    Fmt.money(t.allocated_unused_cost, cur)),
                card('Conserved', t.conserved ? Dom.badge('yes', 'ok') : Dom.badge('no', 'bad'),
                    t.conserved ? 'allocated + idle = capacity' :
                        R.figure(t.overcommitted_gpu_hours, 3) + ' GPU-h given out beyond capacity')));
            wrap.appendChild(Dom.meter(t.utilisation || 0, 1, Fmt.pct(t.utilisation) + ' allocated',
                {label: 'Cluster utilisation'}));
            var ucols = function (first) {
                return first.concat([
                    {key: 'capacity_gpu_hours', label: 'Capacity GPU-h', num: true, render: function (r) {
                        return R.figure(r.capacity_gpu_hours, 3);
                    }},
                    {key: 'allocated_gpu_hours', label: 'Allocated GPU-h', num: true, render: function (r) {
                        return R.figure(r.allocated_gpu_hours, 3);
                    }},
                    {key: 'idle_gpu_hours', label: 'Idle GPU-h', num: true, render: function (r) {
                        return R.figure(r.idle_gpu_hours, 3);
                    }},
                    {key: 'utilisation', label: 'Utilisation', num: true, render: function (r) {
                        return Fmt.pct(r.utilisation);
                    }},
                    {key: 'allocated_unused_gpu_hours', label: 'Unused GPU-h', num: true, render: function (r) {
                        return R.figure(r.allocated_unused_gpu_hours, 3);
                    }},
                    {key: 'idle_cost', label: 'Idle cost', num: true, render: function (r) {
                        return Fmt.money(r.idle_cost, cur);
                    }},
                    {key: 'conserved', label: 'Conserved', render: function (r) {
                        return r.conserved ? Dom.badge('yes', 'ok') : Dom.badge('no', 'bad');
                    }}
                ]);
            };
            var models = Object.keys(u.gpu_models || {}).sort().map(function (k) {
                return Object.assign({model: k}, u.gpu_models[k]);
            });
            wrap.appendChild(h('h3', null, 'By GPU model'));
            wrap.appendChild(Dom.table(ucols([{key: 'model', label: 'GPU model'}]), models,
                {empty: 'No GPUs.'}));
            var nodes = u.nodes || [];
            wrap.appendChild(h('h3', null, 'By node'));
            if (nodes.length > 50) {
                var det = h('details', null, h('summary', null, Fmt.int(nodes.length) + ' nodes'));
                det.addEventListener('toggle', function once() {
                    det.removeEventListener('toggle', once);
                    det.appendChild(nodeTable());
                });
                wrap.appendChild(det);
            } else {
                wrap.appendChild(nodeTable());
            }
            function nodeTable() {
                return Dom.table(ucols([{key: 'node', label: 'Node'}, {key: 'gpu_model', label: 'GPU model'},
                    {key: 'gpus', label: 'GPUs', num: true}]), nodes, {empty: 'No nodes with GPUs.'});
            }
            return wrap;
        }

        /* One budget: its meter with the 80 % and 100 % marks, what happens
         * at them, its events, and the burn-up chart of its period. */
        function budgetCard(b, events, burn, charts) {
            var unit = burn ? burn.unit : R.budgetUnit(b.unit, '');
            var state = R.budgetState(b);
            var words = R.actionWords(b.action, b.team);
            var max = Math.max(b.limit, b.used) || 1;
            var endShown = Fmt.ms(b.period_end) - 1;
            var id = 'budget-' + b.name.replace(/[^a-zA-Z0-9_-]/g, '-');
            var art = h('article', {class: 'panel budget', 'aria-labelledby': id + '-h'},
                h('h3', {id: id + '-h'}, b.name, ' ', Dom.badge(state.text, state.kind)),
                h('p', {class: 'muted'}, 'Team ', h('strong', null, b.team), ' \u00b7 ', b.period, ' ',
                    Fmt.day(Fmt.ms(b.period_start)), ' \u2013 ', Fmt.day(endShown), ' (UTC) \u00b7 ',
                    R.actionShort(b.action)),
                Dom.meter(b.used, max, unit.fmt(b.used) + ' of ' + unit.fmt(b.limit) + ' (' +
                    Fmt.num(b.percent, 1) + '\u00a0%)', {
                    kind: state.kind === 'bad' ? 'bad' : state.kind === 'warn' ? 'warn' : null,
                    label: b.name + ': ' + Fmt.num(b.percent, 1) + ' % of the limit used',
                    marks: [{at: 0.8 * b.limit / max, label: '80 %'}, {at: b.limit / max, label: '100 %'}]
                }),
                h('ul', {class: 'budget-marks'},
                    h('li', null, h('strong', null, 'At 80\u00a0%: '), words.at80, '.'),
                    h('li', null, h('strong', null, 'At 100\u00a0%: '), words.at100, '.')));
            var facts = [];
            if (burn) {
                facts.push('Remaining ' + unit.fmt(Math.max(0, b.limit - b.used)) + '.');
                if (burn.projected !== null)
                    facts.push('At this rate ' + unit.fmt(burn.projected) + ' by the period\u2019s end (' +
                        Fmt.num(b.limit > 0 ? burn.projected / b.limit * 100 : 0, 0) + '\u00a0% of the limit).');
            }
            if (facts.length)
                art.appendChild(h('p', null, facts.join(' ')));
            var evs = events.filter(function (e) {
                return e.budget === b.name && e.period_start === b.period_start;
            });
            if (evs.length) {
                art.appendChild(h('ul', {class: 'budget-events', 'aria-label': 'Marks reached this period'},
                    evs.map(function (e) {
                        return h('li', null, Dom.badge(e.threshold_percent + '\u00a0%',
                            e.threshold_percent >= 100 ? 'bad' : 'warn'),
                        ' reached ' + Fmt.time(Fmt.ms(e.at)) + ' (' + unit.fmt(e.used) + ' of ' + unit.fmt(e.limit) + ')');
                    })));
            }
            if (burn) {
                var el = h('div', {class: 'chart budget-chart', role: 'img',
                    'aria-label': 'Burn-up of ' + b.name + ': ' + unit.fmt(burn.total) + ' used of ' +
                        unit.fmt(b.limit) + ' by day; the 80 % and 100 % lines are the marks'});
                art.appendChild(el);
                charts.push(function () {
                    return Dom.chart(el, {t: burn.t, series: [
                        {label: 'Used (cumulative)', values: burn.used, fmt: unit.fmt, colour: '--c1', dash: null},
                        {label: '100 % (' + b.action + ')', values: burn.limit, fmt: unit.fmt, colour: '--bad', dash: [8, 4], points: false},
                        {label: '80 % (warning)', values: burn.warn, fmt: unit.fmt, colour: '--warn', dash: [2, 4], points: false}
                    ]}, {height: 180, yfmt: function (v) {
                        return R.figure(v, 2);
                    }});
                });
            }
            return art;
        }

        App.page('/cost', {
            title: 'Teams and cost',
            render: function (ctx) {
                var st = R.parse(ctx.query);
                var allTeams = ctx.can('allTeams');
                if (!allTeams)
                    st.team = '';
                var charts = [];
                var rowsOffset = 0;
                var last = null; /* the report shown */

                function destroyCharts() {
                    charts.forEach(function (c) {
                        if (c && c.destroy)
                            c.destroy();
                    });
                    charts = [];
                }
                ctx.onCleanup(destroyCharts);

                var form = h('form', {class: 'filters', 'aria-label': 'Report'});
                var quick = h('div', {class: 'toolbar cost-quick', role: 'group', 'aria-label': 'Quick ranges'});
                var cmdBox = h('div', {class: 'cost-cmd'});
                var status = h('div', {'aria-live': 'polite'});
                var sumBox = h('div');
                var chartBox = h('section', {class: 'panel cost-panel', 'aria-labelledby': 'cost-chart-h'});
                var tableBox = h('section', {'aria-labelledby': 'cost-table-h'});
                var budgetBox = h('section', {'aria-labelledby': 'cost-budgets-h'});
                var utilBox = h('section', {class: 'panel cost-panel', 'aria-labelledby': 'cost-util-h'});

                ctx.main.appendChild(h('h1', null, 'Teams and cost'));
                ctx.main.appendChild(h('p', {class: 'muted'},
                    'Usage, compute units, energy, cost and carbon from the usage ledger, priced by the Pricing in force. ' +
                    (allTeams ? 'Every team.' : 'Your team (' + ctx.who.team + ') only.')));
                ctx.main.appendChild(form);
                ctx.main.appendChild(quick);
                ctx.main.appendChild(cmdBox);
                ctx.main.appendChild(status);
                ctx.main.appendChild(sumBox);
                ctx.main.appendChild(chartBox);
                ctx.main.appendChild(tableBox);
                ctx.main.appendChild(budgetBox);
                ctx.main.appendChild(utilBox);

                function buildForm(teams) {
                    Dom.clear(form);
                    form.appendChild(Dom.field({label: 'By', name: 'by', value: st.by,
                        options: R.BYS.map(function (b) {
                            return [b, BY_LABEL[b]];
                        })}));
                    form.appendChild(Dom.field({label: 'Per', name: 'period', value: st.period,
                        options: R.PERIODS.map(function (p) {
                            return [p, PERIOD_LABEL[p]];
                        })}));
                    form.appendChild(dateField('from', 'From (UTC)', st.from, 'empty: the 1st of this month'));
                    form.appendChild(dateField('to', 'To (UTC, not included)', st.to, 'empty: now'));
                    if (allTeams) {
                        form.appendChild(Dom.field({label: 'Team', name: 'team', value: st.team,
                            options: [['', 'All teams']].concat((teams || []).map(function (t) {
                                return [t, t];
                            }).concat(st.team && (teams || []).indexOf(st.team) < 0 ? [[st.team, st.team]] : []))}));
                    }
                    var cb = h('input', {type: 'checkbox', id: 'f-share_idle', name: 'share_idle',
                        checked: st.share_idle});
                    form.appendChild(h('div', {class: 'field cost-check'},
                        h('label', {for: 'f-share_idle'}, cb, ' Chargeback'),
                        h('small', {class: 'hint'}, 'spread the idle GPUs\u2019 cost')));
                    form.appendChild(h('button', {type: 'submit', class: 'primary'}, 'Show'));
                }

                function readForm() {
                    var el = form.elements;
                    st.by = el.by.value;
                    st.period = el.period.value;
                    st.from = el.from.value.trim();
                    st.to = el.to.value.trim();
                    st.team = el.team ? el.team.value : '';
                    st.share_idle = el.share_idle.checked;
                }

                function apply(push) {
                    rowsOffset = 0;
                    ctx.setQuery(R.toQuery(st), {push: push});
                    load();
                }

                form.addEventListener('submit', function (ev) {
                    ev.preventDefault();
                    readForm();
                    apply(true);
                });
                form.addEventListener('change', function (ev) {
                    /* selects and the checkbox apply at once; dates on
                     * "Show" or when complete */
                    if (ev.target.type === 'date' && !ev.target.value && ev.target.validity && !ev.target.validity.valid)
                        return;
                    readForm();
                    apply(true);
                });

                R.quickRanges(Date.now()).forEach(function (q) {
                    var on = st.from === q.from && st.to === q.to;
                    quick.appendChild(h('button', {type: 'button', 'aria-pressed': on ? 'true' : 'false',
                        onclick: function () {
                            st.from = q.from;
                            st.to = q.to;
                            buildForm(teamList);
                            markQuick();
                            apply(true);
                        }, dataset: {from: q.from, to: q.to}}, q.label));
                });
                function markQuick() {
                    quick.querySelectorAll('button').forEach(function (b) {
                        b.setAttribute('aria-pressed', b.dataset.from === st.from && b.dataset.to === st.to ? 'true' : 'false');
                    });
                }

                function renderCmd() {
                    Dom.clear(cmdBox);
                    var dl = h('button', {type: 'button', id: 'cost-csv', onclick: function () {
                        dl.disabled = true;
                        Api.download('/v1/report', R.apiParams(st, 'csv')).then(function (f) {
                            Dom.toast('Saved ' + f.name + ' (' + Fmt.bytes(f.size) + ')');
                        }, function (e) {
                            status.appendChild(Dom.message(e));
                        }).then(function () {
                            dl.disabled = false;
                        });
                    }}, 'Download CSV');
                    cmdBox.appendChild(h('div', {class: 'toolbar'}, dl,
                        h('span', {class: 'muted'}, 'the same bytes as'),
                        h('code', {class: 'cost-cmdline'}, R.command(st))));
                }

                var teamList = null;
                var reportReq = 0;

                function renderTable() {
                    Dom.clear(tableBox);
                    if (!last)
                        return;
                    var rep = last.report;
                    var rows = R.sortRows(rep.rows, st.sort);
                    var total = Object.assign({_total: true, key: 'Total', period: ''}, last.totals);
                    var page = rows.slice(rowsOffset, rowsOffset + ROWS_PER_PAGE);
                    tableBox.appendChild(h('h2', {id: 'cost-table-h'}, 'By ' + BY_WORD[st.by] +
                        (st.period !== 'none' ? ' and ' + st.period : '')));
                    var tbl = Dom.table(columns(st, rep), rows.length ? page.concat([total]) : [], {
                        sort: st.sort,
                        onSort: function (s) {
                            st.sort = s;
                            rowsOffset = 0;
                            ctx.setQuery(R.toQuery(st), {push: false});
                            renderTable();
                            var b = tableBox.querySelector('th[aria-sort] button');
                            if (b)
                                b.focus();
                        },
                        caption: Fmt.int(rows.length) + (rows.length === 1 ? ' row; ' : ' rows; ') + (rep.chargeback ? 'chargeback' : 'showback') +
                            ' in ' + rep.currency + '; ' + Fmt.time(Fmt.ms(rep.from), true) + ' to ' +
                            Fmt.time(Fmt.ms(rep.to), true) + ' UTC' + (st.period !== 'none' ?
                            '; the total of jobs is left out: a job that runs over several periods is in each' : ''),
                        empty: 'No usage in this range.',
                        rowAttrs: function (r) {
                            return r._total ? {class: 'cost-total'} : null;
                        }
                    });
                    tableBox.appendChild(tbl);
                    if (rows.length > ROWS_PER_PAGE) {
                        tableBox.appendChild(Dom.pager(rowsOffset, ROWS_PER_PAGE, rows.length, function (off) {
                            rowsOffset = off;
                            renderTable();
                        }));
                    }
                }

                function renderChart() {
                    destroyChartsOf('report');
                    Dom.clear(chartBox);
                    if (!last)
                        return;
                    var rep = last.report;
                    var m = R.metric(st.metric);
                    var cur = rep.currency;
                    chartBox.appendChild(h('div', {class: 'toolbar'},
                        h('h2', {id: 'cost-chart-h'}, m.label + (st.period !== 'none' ? ' per ' + st.period : '') +
                            ' by ' + BY_WORD[st.by]),
                        h('span', {class: 'spacer'}),
                        metricPicker(st, function (k) {
                            st.metric = k;
                            ctx.setQuery(R.toQuery(st), {push: false});
                            renderChart();
                            var b = chartBox.querySelector('.segmented button[aria-pressed="true"]');
                            if (b)
                                b.focus();
                        })));
                    if (!rep.rows.length) {
                        chartBox.appendChild(h('p', {class: 'muted'}, 'No usage in this range.'));
                        return;
                    }
                    var grid = h('div', {class: 'cost-chart-grid'});
                    chartBox.appendChild(grid);
                    var data = st.period !== 'none' ? R.periodSeries(rep.rows, m.key, 6) : null;
                    if (data && data.t.length < 2) {
                        grid.appendChild(h('p', {class: 'muted'}, 'One ' + st.period + ' in this range: its figures are the shares beside and the table below.'));
                    } else if (data) {
                        data.series.forEach(function (s) {
                            s.fmt = function (v) {
                                return m.fmt(v, cur);
                            };
                        });
                        var el = h('div', {class: 'chart', role: 'img', 'aria-label': m.label + ' per ' + st.period +
                            ' of the ' + data.series.length + ' largest ' + BY_WORD[st.by] +
                            's; the same figures are in the table below'});
                        grid.appendChild(el);
                        var c = Dom.chart(el, data, {height: 240, yfmt: function (v) {
                            return R.figure(v, 2);
                        }});
                        c._of = 'report';
                        charts.push(c);
                    }
                    grid.appendChild(h('div', null, h('h3', null, 'Share of the range'), shares(rep.rows, m, cur, st.by)));
                }

                function destroyChartsOf(kind) {
                    charts = charts.filter(function (c) {
                        if (c._of === kind) {
                            c.destroy();
                            return false;
                        }
                        return true;
                    });
                }

                function loadReport() {
                    var my = ++reportReq;
                    Dom.clear(status);
                    status.appendChild(h('p', {class: 'muted'}, 'Loading the report\u2026'));
                    return Api.get('/v1/report', R.apiParams(st)).then(function (rep) {
                        if (!ctx.alive() || my !== reportReq)
                            return;
                        Dom.clear(status);
                        last = {report: rep, totals: R.totals(rep.rows, st.period !== 'none')};
                        Dom.clear(sumBox);
                        sumBox.appendChild(summary(rep, last.totals, st));
                        renderChart();
                        renderTable();
                    }, function (e) {
                        if (!ctx.alive() || my !== reportReq)
                            return;
                        Dom.clear(status);
                        last = null;
                        Dom.clear(sumBox);
                        destroyChartsOf('report');
                        Dom.clear(chartBox);
                        chartBox.appendChild(h('h2', {id: 'cost-chart-h'}, 'Report'));
                        chartBox.appendChild(Dom.message(e));
                        Dom.clear(tableBox);
                    });
                }

                var budgetReq = 0, budgetTeam = null;
                function loadBudgets() {
                    var my = ++budgetReq;
                    var team = budgetTeam = st.team;
                    destroyChartsOf('budget');
                    Dom.clear(budgetBox);
                    budgetBox.appendChild(h('h2', {id: 'cost-budgets-h'}, 'Budgets' + (team ? ' of team ' + team : '')));
                    var body = h('div', null, h('p', {class: 'muted'}, 'Loading\u2026'));
                    budgetBox.appendChild(body);
                    return Api.get('/v1/budgets').then(function (bd) {
                        bd.budgets = R.budgetsOf(bd.budgets, team);
                        var budgets = bd.budgets;
                        if (!budgets.length)
                            return {bd: bd, rep: null};
                        var from = R.earliestStart(budgets);
                        var p = {by: 'team', period: 'day', from: from};
                        var teams = {};
                        budgets.forEach(function (b) {
                            teams[b.team] = true;
                        });
                        if (Object.keys(teams).length === 1)
                            p.team = budgets[0].team;
                        return Api.get('/v1/report', p).then(function (rep) {
                            return {bd: bd, rep: rep};
                        }, function (e) {
                            return {bd: bd, rep: null, err: e};
                        });
                    }).then(function (x) {
                        if (!ctx.alive() || my !== budgetReq)
                            return;
                        Dom.clear(body);
                        var budgets = x.bd.budgets || [];
                        if (!budgets.length) {
                            body.appendChild(h('p', {class: 'muted'}, 'No budgets' +
                                (team ? ' for team ' + team + '.' : allTeams ? '.' : ' for team ' + ctx.who.team + '.') +
                                ' An admin applies them as kind: Budget (docs/metering.md).'));
                            return;
                        }
                        if (x.err)
                            body.appendChild(Dom.message(x.err));
                        var now = Date.now();
                        var cur = x.rep ? x.rep.currency : '';
                        var grid = h('div', {class: 'panels budgets'});
                        var todo = [];
                        budgets.forEach(function (b) {
                            var burn = x.rep ? R.burnSeries(b, x.rep.rows, now, cur) : null;
                            grid.appendChild(budgetCard(b, x.bd.events || [], burn, todo));
                        });
                        body.appendChild(grid);
                        body.appendChild(h('p', {class: 'muted'}, 'Use counts the team\u2019s closed intervals in the period and its running jobs up to now (docs/metering.md, Budgets); ' +
                            'the burn-up sums the report by day, in UTC.'));
                        todo.forEach(function (f) {
                            var c = f();
                            c._of = 'budget';
                            charts.push(c);
                        });
                    }, function (e) {
                        if (!ctx.alive() || my !== budgetReq)
                            return;
                        Dom.clear(body);
                        body.appendChild(Dom.message(e));
                    });
                }

                function loadUtil() {
                    Dom.clear(utilBox);
                    utilBox.appendChild(h('div', {class: 'toolbar'},
                        h('h2', {id: 'cost-util-h'}, 'Cluster utilisation'),
                        h('span', {class: 'spacer'}),
                        h('button', {type: 'button', id: 'cost-util-csv', onclick: function (ev) {
                            var b = ev.currentTarget;
                            b.disabled = true;
                            Api.download('/v1/report/utilisation', {from: st.from, to: st.to, format: 'csv'}).then(function (f) {
                                Dom.toast('Saved ' + f.name + ' (' + Fmt.bytes(f.size) + ')');
                            }, function (e) {
                                utilBox.appendChild(Dom.message(e));
                            }).then(function () {
                                b.disabled = false;
                            });
                        }}, 'Download CSV')));
                    utilBox.appendChild(h('p', {class: 'muted'}, 'Its CSV: ', h('code', null, R.utilCommand(st))));
                    var body = h('div', null, h('p', {class: 'muted'}, 'Loading\u2026'));
                    utilBox.appendChild(body);
                    return Api.get('/v1/report/utilisation', {from: st.from, to: st.to}).then(function (u) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(body);
                        body.appendChild(utilisationPanel(u));
                    }, function (e) {
                        if (!ctx.alive())
                            return;
                        Dom.clear(body);
                        body.appendChild(Dom.message(e));
                    });
                }

                function load() {
                    renderCmd();
                    markQuick();
                    if (st.team !== budgetTeam)
                        loadBudgets();
                    return Promise.all([loadReport(), loadUtil()]);
                }

                buildForm([]);
                if (allTeams) {
                    Api.get('/v1/teams').then(function (t) {
                        if (!ctx.alive())
                            return;
                        teamList = (t.teams || []).map(function (x) {
                            return x.name;
                        }).sort();
                        var focused = document.activeElement && form.contains(document.activeElement) ?
                            document.activeElement.name : null;
                        buildForm(teamList);
                        if (focused && form.elements[focused])
                            form.elements[focused].focus();
                    }, function () { /* the selector keeps the team of the URL */ });
                }
                load();
            }
        });
    })();
}

if (typeof module !== 'undefined' && module.exports)
    module.exports = CostReport;
