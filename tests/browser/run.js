#!/usr/bin/env node
/*
 * run.js - the dashboard's end-to-end tests in a real browser; prints TAP
 * (tests/integration/browser.t runs it under prove).
 *
 * Starts a sluiced of its own ($SLUICE_BIN/sluiced --dev, fake GPUs
 * 4xH100,4xA100-80GB, examples/demo-teams.yaml and the users of
 * harness.js with tokens), launches Chromium through playwright-core
 * (headless), and runs every tests/browser/scenarios/NN-*.js in name
 * order. A scenario exports `async function (t, env)`; see
 * tests/browser/README.md for t and env. Console errors, uncaught
 * exceptions and CSP violations on any page of a scenario fail it.
 * sluiced, the dev server and Chromium are stopped at the end, whatever
 * happens.
 *
 * Environment:
 *   SLUICE_BIN            the build to test (default build/asan)
 *   SLUICE_UI_SERVER      sluiced (default): the dashboard sluiced serves at
 *                         /ui/; dev: web/dev/serve.py in front of sluiced,
 *                         serving web/ from disk
 *   SLUICE_BROWSER_OUT    where screenshots go (default tests/browser/out)
 *   SLUICE_BROWSER_ONLY   a regular expression: only the scenario files
 *                         whose names match
 *   SLUICE_BROWSER_TIMEOUT  seconds one scenario may take (default 180)
 *   SLUICE_CHROMIUM       the browser (default /usr/bin/chromium)
 *   SLUICE_KEEP_TMP=1     keep sluiced's temp dir (its log, data)
 * It skips (1..0 # SKIP) only when playwright-core or Chromium is absent.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const H = require('./harness.js');

const OUT = path.resolve(process.env.SLUICE_BROWSER_OUT || path.join(__dirname, 'out'));
const SCENARIOS = path.join(__dirname, 'scenarios');
const SCENARIO_TIMEOUT = 1000 * Number(process.env.SLUICE_BROWSER_TIMEOUT || 180);
const UI_SERVER = process.env.SLUICE_UI_SERVER || 'sluiced';

/* --- TAP ------------------------------------------------------------------ */

let n = 0;
let failed = 0;
const shots = [];

function emit(line) {
    process.stdout.write(line + '\n');
}

function diag(...lines) {
    for (const l of lines)
        for (const s of String(l).split('\n'))
            emit('# ' + s);
}

function result(ok, name, why, directive) {
    n++;
    emit((ok ? 'ok ' : 'not ok ') + n + ' - ' + String(name).replace(/[\n#]/g, ' ') + (directive ? ' # ' + directive : ''));
    if (!ok && !/^TODO/.test(directive || ''))
        failed++;
    if (!ok && why && why.length)
        diag(...why);
    return ok;
}

/* The assertion object a scenario gets: names are prefixed with the
 * scenario's number-name ("00-login: ..."). */
function makeT(prefix, state) {
    const name = (s) => prefix + ': ' + s;
    const show = (v) => typeof v === 'string' ? JSON.stringify(v) : util.inspect(v, {depth: 4, breakLength: 120});
    return {
        ok: (cond, s, ...why) => result(!!cond, name(s), why),
        is: (got, want, s) => result(util.isDeepStrictEqual(got, want), name(s),
            ['       got: ' + show(got), '  expected: ' + show(want)]),
        isnt: (got, other, s) => result(!util.isDeepStrictEqual(got, other), name(s), ['  got what it should not: ' + show(got)]),
        like: (got, re, s) => result(re.test(String(got)), name(s), ['  ' + show(got), "    doesn't match " + re]),
        unlike: (got, re, s) => result(!re.test(String(got)), name(s), ['  ' + show(got), '    matches ' + re]),
        pass: (s) => result(true, name(s)),
        fail: (s, ...why) => result(false, name(s), why),
        skip: (s, reason) => result(true, name(s), null, 'SKIP ' + (reason || '')),
        /* A check that may fail while the feature is being written: prove
         * does not count it, and reports it once it passes. */
        todo: (cond, s, reason) => result(!!cond, name(s), null, 'TODO ' + (reason || '')),
        diag: (...l) => diag(...l),
        /* Console errors matching `re` are expected in this scenario. */
        allowConsole: (re) => state.allowed.push(re),
        /* NAME.png under the output directory; the whole page. */
        screenshot: async (page, shot) => {
            const file = path.join(OUT, String(shot).replace(/[^A-Za-z0-9._-]+/g, '_') + '.png');
            await page.screenshot({path: file, fullPage: true});
            shots.push({file, scenario: prefix, url: page.url()});
            return file;
        }
    };
}

/* --- one page's errors ----------------------------------------------------- */

/* Chromium's line for an answer of 4xx from the API: the page asked and
 * was refused, which the page shows; not an error of the page. */
function expectedConsole(msg) {
    const loc = msg.location ? msg.location() : {};
    return /^Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text()) &&
        /\/v1\//.test(loc && loc.url ? loc.url : '');
}

function watchPage(page, state) {
    page.on('console', (m) => {
        if (m.type() !== 'error' || expectedConsole(m))
            return;
        const text = m.text();
        if (state.allowed.some((re) => re.test(text)))
            return;
        state.errors.push('console error on ' + page.url() + ': ' + text);
    });
    page.on('pageerror', (e) => {
        state.errors.push('uncaught exception on ' + page.url() + ': ' + (e && e.stack ? e.stack : e));
    });
}

/* Reported by an init script (which CSP does not cover) through a binding. */
function cspListener() {
    document.addEventListener('securitypolicyviolation', (e) => {
        window.__sluiceCsp({directive: e.violatedDirective, blocked: e.blockedURI,
            source: e.sourceFile, line: e.lineNumber, sample: e.sample});
    });
}

/* --- the environment a scenario gets ---------------------------------------- */

function makeEnv(ctx, state) {
    const {sluiced, users, origin, browser} = ctx;
    const base = origin + '/ui/';
    const tokens = {};
    for (const u of Object.keys(users))
        tokens[u] = users[u].token;

    /* Wait for the page of the current URL: its h1 in <main>. */
    async function ready(page, timeout) {
        await page.waitForSelector('main h1', {timeout: timeout || 15000});
        return page;
    }

    async function newContext(token, opts) {
        opts = opts || {};
        const c = await browser.newContext({
            baseURL: origin,
            viewport: opts.viewport || {width: 1280, height: 800},
            colorScheme: opts.colorScheme || 'light',
            acceptDownloads: true
        });
        c.setDefaultTimeout(opts.timeout || 15000);
        state.contexts.push(c);
        await c.exposeBinding('__sluiceCsp', (src, v) => {
            state.errors.push('CSP violation on ' + src.page.url() + ': ' + JSON.stringify(v));
        });
        await c.addInitScript(cspListener);
        if (token)
            await c.addInitScript(H.seedToken, token);
        c.on('page', (p) => watchPage(p, state));
        return c;
    }

    return {
        base, origin, browser, users, tokens,
        server: sluiced.url,
        tmp: sluiced.tmp,
        jobsDir: sluiced.jobs,
        outDir: OUT,
        repo: H.REPO,
        sluice: (...a) => sluiced.sluice(...a),
        api: (token, method, p, body, o) => sluiced.api(token, method, p, body, o),
        ready,
        newContext,
        /* A page in a context of its own (a tab: its own sessionStorage),
         * logged in with `token` when given, showing opts.path (relative
         * to /ui/; default the overview; null: stays on about:blank). */
        async newPage(token, opts) {
            opts = opts || {};
            const c = await newContext(token, opts);
            const page = await c.newPage();
            if (opts.path !== null) {
                await page.goto(base + (opts.path || '').replace(/^\/?(ui\/?)?/, ''));
                await ready(page);
            }
            return page;
        },
        /* Log in through the login form (the page shows it). */
        async logIn(page, token) {
            await page.waitForSelector('form.login-token');
            await page.getByLabel('API token').fill(token);
            await page.getByRole('button', {name: 'Log in'}).click();
            await page.waitForSelector('#top:not([hidden])');
            return ready(page);
        }
    };
}

/* --- main -------------------------------------------------------------------- */

function withTimeout(p, ms, what) {
    let timer;
    return Promise.race([p, new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(what + ' took longer than ' + ms / 1000 + ' s')), ms);
    })]).finally(() => clearTimeout(timer));
}

async function runScenario(file, ctx) {
    const stem = path.basename(file, '.js');
    const state = {errors: [], allowed: [], contexts: []};
    const t = makeT(stem, state);
    diag('--- ' + stem);
    let fn;
    try {
        fn = require(file);
        if (typeof fn !== 'function' && fn && typeof fn.default === 'function')
            fn = fn.default;
        if (typeof fn !== 'function')
            throw new Error('exports no function');
    } catch (e) {
        return result(false, stem + ': loads', [e && e.stack ? e.stack : String(e)]);
    }
    const t0 = Date.now();
    try {
        await withTimeout(Promise.resolve().then(() => fn(t, makeEnv(ctx, state))), SCENARIO_TIMEOUT, stem);
    } catch (e) {
        result(false, stem + ': runs to its end', [e && e.stack ? e.stack : String(e)]);
    }
    for (const c of state.contexts)
        await c.close().catch(() => {});
    result(state.errors.length === 0, stem + ': no console errors, uncaught exceptions or CSP violations', state.errors);
    diag(stem + ' took ' + ((Date.now() - t0) / 1000).toFixed(1) + ' s');
}

async function main() {
    const pw = H.loadPlaywright();
    if (pw.missing) {
        emit('1..0 # SKIP ' + pw.missing);
        return 0;
    }
    const chromium = H.findChromium();
    if (!chromium) {
        emit('1..0 # SKIP no Chromium (apt-get install chromium, or set SLUICE_CHROMIUM)');
        return 0;
    }
    let files = fs.readdirSync(SCENARIOS).filter((f) => /^\d\d-.*\.js$/.test(f)).sort();
    if (process.env.SLUICE_BROWSER_ONLY) {
        const re = new RegExp(process.env.SLUICE_BROWSER_ONLY);
        files = files.filter((f) => re.test(f));
    }
    fs.mkdirSync(OUT, {recursive: true});
    for (const f of fs.readdirSync(OUT))
        if (f.endsWith('.png'))
            fs.rmSync(path.join(OUT, f));

    let sluiced = null, dev = null, browser = null;
    let stopping = false;
    async function stopAll() {
        if (stopping)
            return null;
        stopping = true;
        if (browser)
            await withTimeout(browser.close(), 10000, 'closing Chromium').catch(() => {});
        if (dev)
            await dev.stop();
        return sluiced ? sluiced.stop() : null;
    }
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
        process.once(sig, () => {
            diag('stopped by ' + sig);
            stopAll().finally(() => process.exit(1));
        });
    }

    try {
        sluiced = await H.startSluiced({fakeGpus: '4xH100,4xA100-80GB'});
        const users = await H.setUpUsers(sluiced);
        result(true, 'sluiced on ' + sluiced.url + ' with the demo teams and ' +
            Object.keys(users).join(', '));
        let origin = sluiced.url;
        if (UI_SERVER === 'dev') {
            dev = await H.startDevServer(sluiced.url);
            origin = dev.url;
            diag('the dashboard from web/ through web/dev/serve.py on ' + dev.url);
        } else if (UI_SERVER !== 'sluiced') {
            throw new Error('SLUICE_UI_SERVER is sluiced or dev, not ' + UI_SERVER);
        }
        const why = await H.checkUi(origin);
        if (!result(why === null, 'the dashboard is served at ' + origin + '/ui/', why ? [why] : null))
            throw new Error('no dashboard to test');
        browser = await H.launchBrowser(pw, chromium);
        diag('Chromium ' + browser.version() + ' (' + chromium + '), playwright-core from ' + pw.from);
        const ctx = {sluiced, users, origin, browser};
        for (const f of files)
            await runScenario(path.join(SCENARIOS, f), ctx);
    } catch (e) {
        result(false, 'the browser tests run', [e && e.stack ? e.stack : String(e)]);
    }

    const rc = await stopAll();
    if (sluiced && !result(rc === 0, 'sluiced exits cleanly on SIGTERM', ['exit status ' + rc]))
        diag(sluiced.logTail);
    if (shots.length) {
        diag('screenshots in ' + OUT + ':');
        for (const s of shots)
            diag('  ' + path.basename(s.file) + '  (' + s.scenario + ', ' + s.url + ')');
    }
    emit('1..' + n);
    if (failed)
        diag('Looks like you failed ' + failed + ' test(s) of ' + n + '.');
    return failed ? 1 : 0;
}

/* The whole run may not hang: a last guard, past every scenario's own. */
const guard = setTimeout(() => {
    diag('the browser tests took longer than 30 minutes: stopping');
    H.killAll();
    process.exit(1);
}, 30 * 60 * 1000);
guard.unref();

main().then((rc) => {
    process.exitCode = rc;
}, (e) => {
    diag(e && e.stack ? e.stack : String(e));
    emit('1..' + n);
    process.exitCode = 1;
}).finally(() => {
    /* Anything left (a timed-out scenario's promise) must not keep node up. */
    setTimeout(() => process.exit(process.exitCode), 100).unref();
});
