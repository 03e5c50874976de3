#!/usr/bin/env node
/*
 * ui_scale.js - the dashboard at scale (bench/ui_scale.sh runs it; see
 * bench/README.md): a sluiced with 1,000 fake nodes of 8 GPUs and 100,000
 * jobs in its store, and headless Chromium timing what a user waits for:
 *
 *   jobs page     navigation start -> the table's rows are there
 *   filter        state -> Pending, then a name search: the change's input
 *                 event -> every row shown is a Pending job (and matches)
 *   overview      navigation start -> its charts are drawn
 *   nodes         navigation start -> the first tile, and every GPU's tile
 *
 * "There" is the first DOM mutation after which the page's selector matches
 * (a MutationObserver installed before the page's scripts), then the next
 * animation frame. Each figure is the median of BENCH_UI_RUNS runs, each in
 * a fresh browser context (cold cache, a new login from sessionStorage).
 * The longest main-thread task during each wait is reported too (Chromium's
 * long tasks, over 50 ms): a frozen page shows there. Printed beside the
 * issue's targets; never fails on speed. Fails (exit 1) only when something
 * is wrong: sluiced does not start, or the store does not get its jobs.
 *
 * The jobs come as they would: 7 teams submit through the API (keep-alive
 * connections, BENCH_UI_CONCURRENCY at once) to sluiced's simulated
 * executor (--executor simulated: nothing runs; a task "runs" for its label
 * sim-duration). In submission order, of every 25 jobs: one runs for 30
 * days (1 or 2 GPUs: 6,000 GPUs held), four go to team research's queue,
 * whose quota of 8 GPUs keeps all but 8 of them Pending, and twenty run for
 * a second and succeed. The bench waits for the short ones to end.
 *
 * The page selectors are the SEL object below, to follow the pages;
 * BENCH_UI_SELECTORS='{"nodesTile": ".tile"}' overrides any of them.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const H = require('../tests/browser/harness.js');
const median = H.median;

/* --- what the pages show (web/js/40-overview.js, 41-nodes.js, 43-jobs.js) -- */
const SEL = Object.assign({
    jobsPath: 'jobs',
    /* a row of the jobs table; Dom.table's "nothing" row has td.empty */
    jobsRows: 'table.grid tbody tr:not(:has(td.empty))',
    jobsStateLabel: 'State',           /* the state filter's label (a select) */
    jobsStateValue: 'Pending',
    jobsStateCell: 'td[data-col="state"]',
    jobsSearchLabel: 'Name contains',  /* the name search's label */
    jobsSearchText: 'bert',
    jobsNameCell: 'td[data-col="name"]',
    overviewPath: '',
    overviewChart: '.chart-panel .uplot canvas',  /* uPlot draws as it builds its canvas */
    overviewCharts: 5,                 /* how many make "its charts" (40-overview.js: 5) */
    nodesPath: 'nodes',
    nodesTile: 'ul.tiles > li.tile',   /* one per GPU (41-nodes.js) */
    nodesTiles: 0                      /* 0: as many as the cluster's GPUs */
}, process.env.BENCH_UI_SELECTORS ? JSON.parse(process.env.BENCH_UI_SELECTORS) : {});

const NODES = Number(process.env.BENCH_UI_NODES || 1000);
const GPUS_PER_NODE = 8;
const JOBS = Number(process.env.BENCH_UI_JOBS || 100000);
const RUNS = Number(process.env.BENCH_UI_RUNS || 5);
const CONC = Number(process.env.BENCH_UI_CONCURRENCY || 32);
const WAIT_MS = 1000 * Number(process.env.BENCH_UI_TIMEOUT || 30);
const OUT = path.join(H.REPO, 'bench', 'out');

const TEAMS = ['vision', 'nlp', 'speech', 'robotics', 'recsys', 'genai', 'platform'];
const VERBS = ['train', 'eval', 'finetune', 'infer', 'sweep', 'prep'];
const MODELS = ['resnet50', 'bert', 'llama', 'whisper', 'vit', 't5', 'gpt2', 'yolo'];

const say = (s) => process.stdout.write(s + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* --- the cluster and its jobs ---------------------------------------------- */

function nodesFile(dir) {
    const lines = ['sn,cpu_milli,memory_mib,gpu,model,domain'];
    for (let i = 0; i < NODES; i++) {
        const model = i < NODES * 0.6 ? 'H100' : i < NODES * 0.9 ? 'A100-80GB' : 'L40S';
        lines.push('gpu-' + String(i).padStart(4, '0') + ',128000,1048576,' + GPUS_PER_NODE + ',' + model +
            ',rack-' + String(Math.floor(i / 32)).padStart(2, '0'));
    }
    const f = path.join(dir, 'nodes.csv');
    fs.writeFileSync(f, lines.join('\n') + '\n');
    return f;
}

async function setUpTeams(s) {
    const docs = [];
    for (const t of TEAMS.concat(['research'])) {
        docs.push('apiVersion: sluice/v1\nkind: Team\nmetadata: {name: ' + t + '}\nspec: {defaultQueue: ' + t + '}\n');
        docs.push('apiVersion: sluice/v1\nkind: Queue\nmetadata: {name: ' + t + '}\nspec: {team: ' + t +
            (t === 'research' ? ', nominal: {gpus: 8}' : '') + '}\n');
        docs.push('apiVersion: sluice/v1\nkind: User\nmetadata: {name: u-' + t + '}\nspec: {team: ' + t + ', role: member}\n');
    }
    const r = await s.sluice({input: docs.join('---\n')}, 'apply', '-f', '-');
    if (r.code !== 0)
        throw new Error('sluice apply: ' + r.stderr);
    const tokens = {};
    for (const t of TEAMS.concat(['research'])) {
        const c = await s.sluice('token', 'create', '--user', 'u-' + t);
        if (c.code !== 0)
            throw new Error('sluice token create: ' + c.stderr);
        tokens[t] = c.stdout.trim();
    }
    return tokens;
}

/* Job i of the mix (see the header). */
function jobOf(i) {
    const k = i % 25;
    const name = VERBS[i % VERBS.length] + '-' + MODELS[(i >> 3) % MODELS.length] + '-' + i;
    let team = TEAMS[i % TEAMS.length], gpus = 1, dur = '1s', kind = 'short';
    if (k === 0) {
        kind = 'long';
        dur = '30d';
        gpus = i % 50 === 0 ? 2 : 1;
    } else if (k <= 4) {
        kind = 'pending';
        team = 'research';
        dur = '30d';
    }
    return {team, kind, body: JSON.stringify({
        apiVersion: 'sluice/v1', kind: 'Job',
        metadata: {name, team, labels: {'sim-duration': dur, bench: 'ui-scale'}},
        spec: {command: ['true'], resources: {gpus}}
    })};
}

async function submitAll(s, tokens) {
    let next = 0, created = 0;
    const codes = {};
    const kinds = {short: 0, long: 0, pending: 0};
    const t0 = Date.now();
    let shown = 0;
    async function worker() {
        for (;;) {
            const i = next++;
            if (i >= JOBS)
                return;
            const j = jobOf(i);
            const r = await fetch(s.url + '/v1/jobs', {
                method: 'POST', body: j.body,
                headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + tokens[j.team]}
            });
            await r.arrayBuffer();
            if (r.status === 201) {
                created++;
                kinds[j.kind]++;
            } else {
                codes[r.status] = (codes[r.status] || 0) + 1;
            }
            if (created - shown >= 20000) {
                shown = created;
                say('   ' + created + ' jobs in ' + ((Date.now() - t0) / 1000).toFixed(1) + ' s');
            }
        }
    }
    await Promise.all(Array.from({length: CONC}, worker));
    return {created, codes, kinds, seconds: (Date.now() - t0) / 1000};
}

/* sluice_jobs{state} and sluice_jobs_finished_total{state} of /metrics. */
async function jobCounts(s) {
    const r = await s.api(s.token, 'GET', '/metrics');
    const c = {};
    for (const m of r.text.matchAll(/^sluice_jobs(?:_finished_total)?\{state="(\w+)"\} (\d+)/gm))
        c[m[1]] = (c[m[1]] || 0) + Number(m[2]);
    return c;
}

/* --- in the page ------------------------------------------------------------ */

/* Installed before the page's scripts (an init script: the page's CSP does
 * not apply). window.__bench.arm(spec, fromEvent) resolves {dom, paint,
 * longest} in ms since navigation start, or since the next input event when
 * fromEvent; spec: {sel, min, cells: [[cellSelector, text]...]} - at least
 * `min` elements match `sel` and each has every cell containing its text. */
function benchInit(first) {
    const B = window.__bench = {longest: 0};
    try {
        new PerformanceObserver((l) => {
            for (const e of l.getEntries())
                B.longest = Math.max(B.longest, e.duration);
        }).observe({type: 'longtask', buffered: true});
    } catch (e) { /* no long tasks in this browser */ }
    B.holds = function (spec) {
        const els = document.querySelectorAll(spec.sel);
        if (els.length < spec.min)
            return false;
        for (const el of els) {
            for (const c of spec.cells || []) {
                const cell = el.querySelector(c[0]);
                if (!cell || cell.textContent.toLowerCase().indexOf(c[1].toLowerCase()) < 0)
                    return false;
            }
        }
        return true;
    };
    B.arm = function (spec, fromEvent) {
        return new Promise((resolve) => {
            let t0 = 0, done = false, obs = null;
            B.longest = 0;
            const finish = () => {
                if (done)
                    return;
                done = true;
                const dom = performance.now();
                if (obs)
                    obs.disconnect();
                requestAnimationFrame(() => resolve({dom: dom - t0, paint: performance.now() - t0, longest: B.longest}));
            };
            const start = () => {
                obs = new MutationObserver(() => {
                    if (B.holds(spec))
                        finish();
                });
                obs.observe(document, {childList: true, subtree: true, characterData: true});
                if (!fromEvent && B.holds(spec))
                    finish();
            };
            if (fromEvent) {
                document.addEventListener('input', (e) => {
                    t0 = e.timeStamp;
                    start();
                }, {capture: true, once: true});
            } else {
                start();
            }
        });
    };
    if (first)
        B.first = B.arm(first, false);
}

/* --- measuring --------------------------------------------------------------- */

/* A fresh context, logged in, its init script watching for `first`. */
async function freshPage(browser, origin, token, first) {
    const ctx = await browser.newContext({baseURL: origin, viewport: {width: 1280, height: 800}});
    ctx.setDefaultTimeout(WAIT_MS);
    await ctx.addInitScript(H.seedToken, token);
    await ctx.addInitScript(benchInit, first || null);
    const page = await ctx.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
        if (m.type() === 'error')
            errors.push(m.text());
    });
    return {ctx, page, errors};
}

async function waitMark(page, expr, what) {
    const r = await Promise.race([page.evaluate(expr), sleep(WAIT_MS).then(() => null)]);
    if (!r)
        throw new Error(what + ': not there after ' + WAIT_MS / 1000 + ' s');
    return r;
}

async function count(page, sel) {
    return page.evaluate((s) => document.querySelectorAll(s).length, sel).catch(() => -1);
}

/* One page load in a fresh context: `steps(page)` does the waiting; what
 * it throws is the run's note, with what the page shows of `sel`. */
async function onPage(browser, origin, token, first, sel, steps) {
    const p = await freshPage(browser, origin, token, first);
    try {
        await steps(p.page);
        if (p.errors.length)
            throw new Error('page errors: ' + p.errors[0]);
    } catch (e) {
        e.found = await count(p.page, sel);
        throw e;
    } finally {
        await p.ctx.close();
    }
}

async function measure(browser, origin, token, gpusTotal) {
    const res = {};
    for (const k of ['jobs', 'state', 'search', 'overview', 'tile', 'tiles'])
        res[k] = {runs: [], longest: [], notes: new Set()};
    const add = (k, v) => {
        res[k].runs.push(v.paint);
        res[k].longest.push(v.longest);
    };
    const note = (k, e) => res[k].notes.add(String(e.message || e).split('\n')[0] +
        (e.found !== undefined ? ' (' + e.found + ' found)' : ''));
    /* A figure that could not be taken once (a page not written yet, a
     * selector that does not match) is not waited for again. */
    const gave = (k) => res[k].runs.length > 0 || res[k].notes.size === 0;
    const rows = {sel: SEL.jobsRows, min: 1};
    const pending = {sel: SEL.jobsRows, min: 1, cells: [[SEL.jobsStateCell, SEL.jobsStateValue]]};
    const search = {sel: SEL.jobsRows, min: 1, cells: [[SEL.jobsStateCell, SEL.jobsStateValue],
        [SEL.jobsNameCell, SEL.jobsSearchText]]};
    const tiles = SEL.nodesTiles || gpusTotal;
    const arm = (page, spec, fromEvent) => page.evaluate((a) => {
        window.__bench.next = window.__bench.arm(a[0], a[1]);
    }, [spec, fromEvent]);
    for (let run = 0; run < RUNS; run++) {
        /* jobs: the first render, then the two filter changes in that page */
        if (gave('jobs')) {
            await onPage(browser, origin, token, rows, SEL.jobsRows, async (page) => {
                await page.goto(origin + '/ui/' + SEL.jobsPath, {waitUntil: 'commit'});
                add('jobs', await waitMark(page, () => window.__bench.first, 'the jobs table\'s rows'));
                if (!gave('state'))
                    return;
                try {
                    if (await page.evaluate((sp) => window.__bench.holds(sp), pending))
                        throw new Error('every row shown was ' + SEL.jobsStateValue + ' before the change');
                    await arm(page, pending, true);
                    await page.getByLabel(SEL.jobsStateLabel, {exact: true}).selectOption(SEL.jobsStateValue);
                    add('state', await waitMark(page, () => window.__bench.next, 'rows of ' + SEL.jobsStateValue + ' jobs only'));
                } catch (e) {
                    note('state', e);
                    return;
                }
                if (!gave('search'))
                    return;
                try {
                    await arm(page, search, true);
                    await page.getByLabel(SEL.jobsSearchLabel, {exact: true}).fill(SEL.jobsSearchText);
                    add('search', await waitMark(page, () => window.__bench.next, 'rows matching "' + SEL.jobsSearchText + '"'));
                } catch (e) {
                    note('search', e);
                }
            }).catch((e) => note('jobs', e));
        }

        /* the overview: its charts */
        if (gave('overview')) {
            await onPage(browser, origin, token, {sel: SEL.overviewChart, min: SEL.overviewCharts}, SEL.overviewChart, async (page) => {
                await page.goto(origin + '/ui/' + SEL.overviewPath, {waitUntil: 'commit'});
                add('overview', await waitMark(page, () => window.__bench.first, SEL.overviewCharts + ' charts'));
            }).catch((e) => note('overview', e));
        }

        /* nodes: the first tile, then all of them */
        if (gave('tile')) {
            await onPage(browser, origin, token, {sel: SEL.nodesTile, min: 1}, SEL.nodesTile, async (page) => {
                await page.goto(origin + '/ui/' + SEL.nodesPath, {waitUntil: 'commit'});
                await arm(page, {sel: SEL.nodesTile, min: tiles}, false).catch(() => {});
                add('tile', await waitMark(page, () => window.__bench.first, 'a tile'));
                if (!gave('tiles'))
                    return;
                try {
                    add('tiles', await waitMark(page, () => window.__bench.next, tiles + ' tiles'));
                } catch (e) {
                    e.found = await count(page, SEL.nodesTile);
                    note('tiles', e);
                }
            }).catch((e) => note('tile', e));
        }
    }
    return res;
}

/* --- main ---------------------------------------------------------------------- */

async function main() {
    const pw = H.loadPlaywright();
    const chromium = H.findChromium();
    if (pw.missing || !chromium) {
        say('ui_scale: skipped (' + (pw.missing || 'no Chromium (apt-get install chromium)') + ')');
        return 0;
    }
    const bin = process.env.SLUICE_BIN || path.join(H.REPO, 'build');
    fs.mkdirSync(OUT, {recursive: true});
    const tmp = fs.mkdtempSync(path.join(process.env.TMPDIR || require('node:os').tmpdir(), 'sluice-uibench.'));
    let s = null, dev = null, browser = null;
    try {
        const nodes = nodesFile(tmp);
        /* --sync normal: the load is faster; reads, which the pages do, are the same */
        s = await H.startSluiced({bin, tmp, fakeGpus: null,
            args: ['--executor', 'simulated', '--fake-nodes', nodes, '--sync', 'normal', '--log-level', 'warn']});
        say('== sluiced ' + s.url + ' (' + bin + '), --executor simulated, ' + NODES + ' fake nodes x ' +
            GPUS_PER_NODE + ' GPUs; log ' + path.join(OUT, 'ui_scale-sluiced.log'));
        const tokens = await setUpTeams(s);
        say('-- submitting ' + JOBS + ' jobs, ' + CONC + ' at a time');
        const sub = await submitAll(s, tokens);
        say('   ' + sub.created + ' acknowledged in ' + sub.seconds.toFixed(1) + ' s (' +
            Math.round(sub.created / sub.seconds) + '/s)' +
            (Object.keys(sub.codes).length ? '; refused: ' + JSON.stringify(sub.codes) : ''));
        if (sub.created < JOBS * 0.99)
            throw new Error('only ' + sub.created + ' of ' + JOBS + ' jobs were accepted');
        say('-- waiting for the ' + sub.kinds.short + ' one-second jobs to end');
        const t0 = Date.now();
        let c = {};
        for (;;) {
            c = await jobCounts(s);
            const ended = (c.Succeeded || 0) + (c.Failed || 0) + (c.Cancelled || 0) + (c.Lost || 0) + (c.Timeout || 0);
            if (ended >= sub.kinds.short)
                break;
            if (Date.now() - t0 > 15 * 60 * 1000)
                throw new Error('the short jobs did not end within 15 minutes: ' + JSON.stringify(c));
            await sleep(2000);
        }
        say('   after ' + ((Date.now() - t0) / 1000).toFixed(0) + ' s: ' + JSON.stringify(c));
        const nodesNow = (await s.api(s.token, 'GET', '/v1/nodes')).json.nodes;
        const gpusTotal = nodesNow.reduce((a, n) => a + (Array.isArray(n.gpus) ? n.gpus.length : Number(n.gpus) || 0), 0);

        let origin = s.url;
        if ((process.env.SLUICE_UI_SERVER || 'sluiced') === 'dev') {
            dev = await H.startDevServer(s.url);
            origin = dev.url;
        }
        const why = await H.checkUi(origin);
        if (why)
            throw new Error(why);
        browser = await H.launchBrowser(pw, chromium);
        say('-- Chromium ' + browser.version() + ' headless, 1280x800, ' + RUNS + ' runs of each, a fresh context each (as admin)');
        const res = await measure(browser, origin, s.token, gpusTotal);

        const fmt = (k, label, target) => {
            const r = res[k] || {runs: [], longest: [], notes: new Set()};
            const fig = r.runs.length ? String(Math.round(median(r.runs))).padStart(6) + ' ms  (' +
                Math.round(Math.min(...r.runs)) + '-' + Math.round(Math.max(...r.runs)) + ', ' + r.runs.length + ' runs)' : '     -';
            const t = target ? 'target < ' + target + ' ms' + (r.runs.length ? (median(r.runs) < target ? '  ok' : '  OVER') : '') : '';
            say(label.padEnd(44) + fig.padEnd(33) + t.padEnd(24) +
                (r.longest.length ? 'longest task ' + Math.round(Math.max(...r.longest)) + ' ms' : ''));
            for (const n of r.notes)
                say('    n/a: ' + n);
        };
        say('');
        say('== UI at scale (' + new Date().toISOString().replace(/\.\d+Z$/, 'Z') + ', ' + require('node:os').cpus().length +
            ' CPUs): ' + NODES + ' nodes, ' + gpusTotal + ' GPUs, ' + sub.created + ' jobs (' +
            (c.Pending || 0) + ' Pending, ' + (c.Running || 0) + ' Running, the rest ended); median (min-max)');
        fmt('jobs', 'jobs page: first render (rows there)', 1000);
        fmt('state', 'jobs filter: state -> ' + SEL.jobsStateValue, 1000);
        fmt('search', 'jobs filter: + name contains "' + SEL.jobsSearchText + '"', 1000);
        fmt('overview', 'overview: ' + SEL.overviewCharts + ' charts drawn', 2000);
        fmt('tile', 'nodes page: first GPU tile', 0);
        fmt('tiles', 'nodes page: all ' + (SEL.nodesTiles || gpusTotal) + ' GPU tiles', 0);
        say('(selectors: ' + JSON.stringify(SEL) + ')');
    } finally {
        if (browser)
            await browser.close().catch(() => {});
        if (dev)
            await dev.stop();
        if (s) {
            const rc = await s.stop();
            fs.copyFileSync(s.log, path.join(OUT, 'ui_scale-sluiced.log'));
            if (rc !== 0)
                say('sluiced exit status ' + rc);
        }
        if (process.env.SLUICE_KEEP_TMP !== '1')
            fs.rmSync(tmp, {recursive: true, force: true});
    }
    return 0;
}

main().then((rc) => {
    process.exitCode = rc;
}, (e) => {
    say('ui_scale: ' + (e && e.message ? e.message : e));
    process.exitCode = 1;
});
