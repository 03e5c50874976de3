/*
 * harness.js - what the browser tests (tests/browser/run.js) and the UI
 * benchmark (bench/ui_scale.js) share: finding playwright-core and
 * Chromium, starting and stopping a sluiced on a free loopback port with a
 * temporary data dir (and web/dev/serve.py in front of it when asked),
 * the CLI and the API with a token, users with tokens, and browser
 * contexts already logged in.
 *
 * CommonJS, not ES modules: require() honours NODE_PATH, which is how a
 * machine without web/node_modules points at an installed playwright-core.
 * Node's standard library only, apart from playwright-core.
 */
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..', '..');
const TOKEN_KEY = 'sluice.token';  /* web/js/10-api.js keeps the token here */

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* playwright-core from web/node_modules (`make` installs it there), else
 * wherever require finds it (NODE_PATH). {chromium} or {missing: why}. */
function loadPlaywright() {
    const tries = [path.join(REPO, 'web', 'node_modules', 'playwright-core'), 'playwright-core'];
    for (const t of tries) {
        try {
            return {chromium: require(t).chromium, from: require.resolve(t)};
        } catch (e) {
            if (e.code !== 'MODULE_NOT_FOUND')
                throw e;
        }
    }
    return {missing: 'playwright-core is not installed (make runs npm ci in web/; or set NODE_PATH)'};
}

/* The Chromium to drive: $SLUICE_CHROMIUM, else Debian's, else one on PATH. */
function findChromium() {
    const cands = process.env.SLUICE_CHROMIUM ? [process.env.SLUICE_CHROMIUM] :
        ['/usr/bin/chromium'].concat(['chromium', 'chromium-browser', 'google-chrome'].map((n) =>
            (process.env.PATH || '').split(':').filter(Boolean).map((d) => path.join(d, n))).flat());
    for (const c of cands) {
        try {
            fs.accessSync(c, fs.constants.X_OK);
            return c;
        } catch (e) { /* next */ }
    }
    return null;
}

async function launchBrowser(pw, executablePath) {
    const args = [];
    if (process.getuid && process.getuid() === 0)
        args.push('--no-sandbox');  /* Chromium refuses to run as root with its sandbox */
    if (process.env.SLUICE_CHROMIUM_ARGS)
        args.push(...process.env.SLUICE_CHROMIUM_ARGS.split(/\s+/).filter(Boolean));
    return pw.chromium.launch({executablePath, headless: true, args});
}

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const p = s.address().port;
            s.close(() => resolve(p));
        });
    });
}

/* GET url; resolves {status, text} or {status: 0, text: why}. */
async function httpGet(url, timeoutMs) {
    try {
        const r = await fetch(url, {signal: AbortSignal.timeout(timeoutMs || 2000)});
        return {status: r.status, text: await r.text(), headers: r.headers};
    } catch (e) {
        return {status: 0, text: String(e && e.message ? e.message : e)};
    }
}

/* Every process started here, stopped on any exit of node (a crash, a
 * signal, a timeout) so that nothing outlives the test. */
const children = new Set();
const tmpDirs = new Set();  /* removed at exit unless SLUICE_KEEP_TMP=1 */

function killAll() {
    for (const c of children) {
        try {
            process.kill(c.pid, 'SIGKILL');
        } catch (e) { /* gone */ }
    }
    children.clear();
    for (const d of tmpDirs) {
        if (process.env.SLUICE_KEEP_TMP !== '1')
            fs.rmSync(d, {recursive: true, force: true});
    }
    tmpDirs.clear();
}
process.on('exit', killAll);
/* A reader that went away (prove killed, `| head`) ends the run. */
process.stdout.on('error', (e) => {
    if (e.code === 'EPIPE')
        process.exit(1);
});

function track(child) {
    children.add(child);
    child.exitStatus = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
            children.delete(child);
            resolve(signal ? 128 + os.constants.signals[signal] : code);
        });
    });
    return child;
}

/* SIGTERM, up to `graceMs`, then SIGKILL. Resolves the exit status. */
async function stopChild(child, graceMs) {
    if (!child || child.exitCode !== null || child.signalCode !== null)
        return child ? child.exitStatus : 0;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs || 10000);
    const rc = await child.exitStatus;
    clearTimeout(t);
    return rc;
}

function tail(file, n) {
    try {
        return fs.readFileSync(file, 'utf8').split('\n').slice(-(n || 30)).join('\n');
    } catch (e) {
        return '(no ' + file + ')';
    }
}

/*
 * A sluiced of its own: opts {bin (dir with sluiced and sluice; default
 * $SLUICE_BIN or build/asan), fakeGpus ("4xH100,4xA100-80GB"; null: none),
 * args [...more], tmp (a dir; default a new one, removed by stop())}.
 * Resolves {url, token (admin), data, tmp, jobs (a 1777 dir for jobs to
 * write in), log, bin, stop() -> exit status, sluice(), api()}.
 */
async function startSluiced(opts) {
    opts = opts || {};
    const bin = opts.bin || process.env.SLUICE_BIN || path.join(REPO, 'build', 'asan');
    if (!process.env.ASAN_OPTIONS)
        process.env.ASAN_OPTIONS = 'detect_leaks=1:abort_on_error=1';
    if (!process.env.UBSAN_OPTIONS)
        process.env.UBSAN_OPTIONS = 'print_stacktrace=1:halt_on_error=1';
    const exe = path.join(bin, 'sluiced');
    if (!fs.existsSync(exe))
        throw new Error('no executable ' + exe + ' (build it: make SAN=1 all)');
    const tmp = opts.tmp || fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'sluice-browser.'));
    if (!opts.tmp)
        tmpDirs.add(tmp);
    fs.chmodSync(tmp, 0o711);
    const jobs = path.join(tmp, 'jobs');
    fs.mkdirSync(jobs, {recursive: true});
    fs.chmodSync(jobs, 0o1777);
    const data = path.join(tmp, 'data');
    const log = path.join(tmp, 'sluiced.log');
    const gpus = opts.fakeGpus === undefined ? '4xH100,4xA100-80GB' : opts.fakeGpus;
    for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const args = ['--dev', '--listen', '127.0.0.1:' + port, '--data-dir', data]
            .concat(gpus ? ['--fake-gpus', gpus] : [], opts.args || []);
        const fd = fs.openSync(log, 'a');
        const child = track(childProcess.spawn(exe, args, {stdio: ['ignore', fd, fd]}));
        fs.closeSync(fd);
        const url = 'http://127.0.0.1:' + port;
        const deadline = Date.now() + (opts.startTimeoutMs || 60000);
        let healthy = false;
        while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
            if ((await httpGet(url + '/healthz', 2000)).status === 200) {
                healthy = true;
                break;
            }
            await sleep(100);
        }
        if (healthy) {
            const s = {
                url, port, data, tmp, jobs, log, bin, child,
                token: fs.readFileSync(path.join(data, 'admin.token'), 'utf8').trim(),
                async stop() {
                    const rc = await stopChild(child, 10000);
                    s.logTail = tail(log, 40);
                    if (!opts.tmp && process.env.SLUICE_KEEP_TMP !== '1') {
                        fs.rmSync(tmp, {recursive: true, force: true});
                        tmpDirs.delete(tmp);
                    } else if (!opts.tmp) {
                        tmpDirs.delete(tmp);
                        process.stdout.write('# kept ' + tmp + '\n');
                    }
                    return rc;
                }
            };
            s.sluice = (...a) => sluiceCli(s, ...a);
            s.api = (token, method, p, body, o) => apiCall(s.url, token, method, p, body, o);
            return s;
        }
        await stopChild(child, 2000);
        if (attempt < 3 && /in use/i.test(tail(log, 20)))
            continue;  /* someone took the port between our probe and the bind */
        throw new Error('sluiced did not become healthy; its log ends:\n' + tail(log, 30));
    }
}

/* The CLI: sluice(s, [opts,] ...args) with opts {token, input}; the admin
 * token by default. Resolves {code, stdout, stderr}. */
function sluiceCli(s, ...args) {
    let o = {};
    if (args.length && typeof args[0] === 'object' && !Array.isArray(args[0]))
        o = args.shift();
    return new Promise((resolve) => {
        const env = Object.assign({}, process.env, {SLUICE_SERVER: s.url, SLUICE_TOKEN: o.token || s.token});
        const c = childProcess.execFile(path.join(s.bin, 'sluice'), args.map(String),
            {env, maxBuffer: 64 << 20, timeout: o.timeoutMs || 60000}, (err, stdout, stderr) => {
                resolve({code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr});
            });
        if (o.input !== undefined)
            c.stdin.end(o.input);
        else
            c.stdin.end();
    });
}

/* One API call: body an object (sent as JSON) or a string (YAML when it
 * starts with "apiVersion", else JSON). Resolves {status, headers, json,
 * text}. */
async function apiCall(base, token, method, p, body, o) {
    const headers = {};
    if (token)
        headers.Authorization = 'Bearer ' + token;
    let b;
    if (body !== undefined && body !== null) {
        if (typeof body === 'string') {
            b = body;
            headers['Content-Type'] = (o && o.type) || (/^\s*apiVersion/.test(body) ? 'application/yaml' : 'application/json');
        } else {
            b = JSON.stringify(body);
            headers['Content-Type'] = 'application/json';
        }
    }
    const r = await fetch(base + p, {method: method || 'GET', headers, body: b});
    const text = await r.text();
    let json = null;
    try {
        json = JSON.parse(text);
    } catch (e) { /* not JSON */ }
    return {status: r.status, headers: r.headers, json, text};
}

/* web/dev/serve.py in front of sluiced: the dashboard from web/ on disk.
 * uPlot from web/node_modules, else from wherever require finds it. */
async function startDevServer(sluicedUrl) {
    const env = Object.assign({}, process.env);
    if (!env.UPLOT_DIST && !fs.existsSync(path.join(REPO, 'web', 'node_modules', 'uplot'))) {
        try {
            env.UPLOT_DIST = path.join(path.dirname(require.resolve('uplot/package.json')), 'dist');
        } catch (e) { /* serve.py serves the bundle without uPlot */ }
    }
    const port = await freePort();
    const child = track(childProcess.spawn('python3',
        [path.join(REPO, 'web', 'dev', 'serve.py'), '--listen', '127.0.0.1:' + port, '--sluiced', sluicedUrl],
        {env, stdio: ['ignore', 'ignore', 'pipe']}));
    let err = '';
    child.stderr.on('data', (d) => {
        err = (err + d).slice(-4000);
    });
    const url = 'http://127.0.0.1:' + port;
    for (let i = 0; i < 100 && child.exitCode === null; i++) {
        if ((await httpGet(url + '/ui/', 1000)).status === 200)
            return {url, child, stop: () => stopChild(child, 3000)};
        await sleep(100);
    }
    await stopChild(child, 1000);
    throw new Error('web/dev/serve.py did not start: ' + err);
}

/* Whether ORIGIN/ui/ serves the dashboard: null when it does, else why not. */
async function checkUi(origin) {
    const r = await httpGet(origin + '/ui/', 5000);
    if (r.status === 0)
        return 'GET /ui/: no answer: ' + r.text;
    if (r.status === 404)
        return 'GET /ui/ answers 404: this sluiced serves no dashboard (SLUICE_UI_SERVER=dev puts web/dev/serve.py in front)';
    if (r.status !== 200)
        return 'GET /ui/ answers ' + r.status;
    if (!/<script[^>]+src="\/ui\/[^"]*app[^"]*\.js"/.test(r.text))
        return 'GET /ui/ has no app script: the UI was not built (make needs npm)' +
            (/not built/i.test(r.text) ? '' : '; it says: ' + r.text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').slice(0, 200));
    return null;
}

/* The users the scenarios act as, applied with `sluice apply` on top of
 * examples/demo-teams.yaml (alice: vision member, bob: nlp member mapped
 * to the Unix account nobody), each with a token of its own. */
const USERS = [
    {name: 'alice', team: 'vision', role: 'member', demo: true},
    {name: 'bob', team: 'nlp', role: 'member', demo: true},
    {name: 'carol', team: 'vision', role: 'member'},
    {name: 'tess', team: 'vision', role: 'team-admin'},
    {name: 'victor', team: 'vision', role: 'viewer'},
    {name: 'audrey', team: 'nlp', role: 'auditor'}
];

async function setUpUsers(s) {
    let r = await s.sluice('apply', '-f', path.join(REPO, 'examples', 'demo-teams.yaml'));
    if (r.code !== 0)
        throw new Error('sluice apply -f examples/demo-teams.yaml: ' + r.stderr);
    const yaml = USERS.filter((u) => !u.demo).map((u) =>
        'apiVersion: sluice/v1\nkind: User\nmetadata: {name: ' + u.name + '}\n' +
        'spec: {team: ' + u.team + ', role: ' + u.role + '}\n').join('---\n');
    r = await s.sluice({input: yaml}, 'apply', '-f', '-');
    if (r.code !== 0)
        throw new Error('sluice apply (users): ' + r.stderr);
    const users = {admin: {name: null, team: null, role: 'admin', token: s.token}};
    const w = await s.api(s.token, 'GET', '/v1/whoami');
    if (w.json)
        Object.assign(users.admin, {name: w.json.user, team: w.json.team});
    for (const u of USERS) {
        r = await s.sluice('token', 'create', '--user', u.name);
        const tok = r.stdout.trim().split('\n').pop();
        if (r.code !== 0 || !tok)
            throw new Error('sluice token create --user ' + u.name + ': ' + r.stderr);
        users[u.name] = {name: u.name, team: u.team, role: u.role, token: tok};
    }
    return users;
}

/* The median of a list of numbers (NaN for none): the benchmarks' figure. */
function median(xs) {
    const s = xs.slice().sort((a, b) => a - b);
    if (!s.length)
        return NaN;
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/* A browser context's init script: the token in the tab's sessionStorage
 * before the page's scripts run, once (a logout stays a logout). */
function seedToken(token) {
    try {
        if (!sessionStorage.getItem('sluice.test.seeded')) {
            sessionStorage.setItem('sluice.token', token);
            sessionStorage.setItem('sluice.test.seeded', '1');
        }
    } catch (e) { /* about:blank has no storage */ }
}

/* tests/browser/idp.py DIR [ARGS]: its one line of JSON ({identity, ldap,
 * issuer?, ca?} or {skip} or {error}) with the child, which runs until
 * its stdin closes. */
function startIdp(dir, ...args) {
    const child = childProcess.spawn('python3', [path.join(__dirname, 'idp.py'), dir, ...args],
        {stdio: ['pipe', 'pipe', 'inherit']});
    /* not in 'children': a SIGKILL would leave its slapd behind, while
     * its stdin closing when this process dies stops everything */
    return new Promise((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
            out += d;
            const nl = out.indexOf('\n');
            if (nl >= 0) {
                try {
                    resolve({child, info: JSON.parse(out.slice(0, nl))});
                } catch (e) {
                    reject(new Error('idp.py: ' + out));
                }
            }
        });
        child.on('exit', (code) => reject(new Error('idp.py exited ' + code + ': ' + out)));
    });
}

module.exports = {
    startIdp,
    REPO, TOKEN_KEY, USERS, sleep, loadPlaywright, findChromium, launchBrowser, freePort,
    httpGet, startSluiced, startDevServer, stopChild, checkUi, setUpUsers, seedToken,
    sluiceCli, apiCall, killAll, tail, median
};
