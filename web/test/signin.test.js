/*
 * signin.test.js - signing in by password and single sign-on
 * (web/js/25-signin.js): what the login page offers from GET /v1/login,
 * the password request and the words for each error the server gives, the
 * device flow's poll loop against a fake API and a fake clock (no real
 * waiting).
 */
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const S = require('../js/25-signin.js');

function apiError(status, message, extra) {
    return Object.assign({name: 'ApiError', status: status, code: 'x', message: message, field: null, retryAfter: null}, extra || {});
}

test('methods: a token always; a password and single sign-on when the server has them', () => {
    assert.deepStrictEqual(S.methods({methods: ['token']}), {token: true, password: false, oidc: null});
    assert.deepStrictEqual(S.methods({methods: ['token', 'password']}), {token: true, password: true, oidc: null});
    assert.deepStrictEqual(S.methods({methods: ['token', 'oidc'], oidc: {issuer: 'https://idp.example.com/', client_id: 'sluice'}}),
        {token: true, password: false, oidc: {issuer: 'https://idp.example.com/', clientId: 'sluice'}});
    assert.deepStrictEqual(S.methods({methods: ['token', 'password', 'oidc']}),
        {token: true, password: true, oidc: {issuer: '', clientId: ''}});
    /* no answer (an older sluiced, a network error) or a strange one: a token only */
    for (const a of [null, undefined, {}, {methods: 'password'}, {methods: [1, 2]}, 'token'])
        assert.deepStrictEqual(S.methods(a), {token: true, password: false, oidc: null}, JSON.stringify(a));
    /* "oidc" details without the method do not offer it */
    assert.strictEqual(S.methods({methods: ['token'], oidc: {issuer: 'https://x'}}).oidc, null);
});

test('password: one POST /v1/login with the name and password, answered with the token body', async () => {
    const calls = [];
    const body = {token: 'sl_abc', id: 7, user: 'ann', team: 'vision', role: 'member', expires_at: '2026-12-07T08:00:00Z'};
    const got = await S.password((p, b) => {
        calls.push([p, b]);
        return Promise.resolve(body);
    }, 'ann', 'pw');
    assert.deepStrictEqual(calls, [['/v1/login', {user: 'ann', password: 'pw'}]]);
    assert.strictEqual(got, body);
    await assert.rejects(S.password(() => Promise.reject(apiError(401, 'wrong user name or password')), 'ann', 'x'),
        (e) => e.status === 401);
});

test('errorText: every answer of a password sign-in in clear words', () => {
    const t = (e, u) => S.errorText(e, 'password', u);
    assert.strictEqual(t(apiError(401, 'invalid credentials')), 'Wrong user name or password.');
    assert.strictEqual(t(apiError(403, 'ann is in no group mapped to a team')),
        'Your password is right, but sluiced gives your account no access: ann is in no group mapped to a team.' +
        ' Ask your administrator to add you to a group that Sluice maps to a team.');
    assert.match(t(apiError(409, 'admin is a local account'), 'admin'), /^"admin" is a local Sluice account.*API token/);
    assert.strictEqual(t(apiError(429, 'too many failed logins; try again in 42s', {retryAfter: '42'})),
        'Too many failed sign-ins for this name or address. Try again in 42 seconds.');
    assert.match(t(apiError(429, 'x', {retryAfter: '1'})), /Try again in 1 second\.$/);
    assert.match(t(apiError(429, 'x', {retryAfter: '119'})), /Try again in 119 seconds\.$/);
    assert.match(t(apiError(429, 'x', {retryAfter: '900'})), /Try again in 15 minutes\.$/);
    assert.match(t(apiError(429, 'x', {retryAfter: '901'})), /Try again in 16 minutes\.$/);
    assert.match(t(apiError(429, 'x')), /Try again later\.$/);
    assert.strictEqual(t(apiError(503, 'LDAP server unreachable')),
        'The identity provider cannot be reached just now; try again later. API tokens still work: paste one below.');
    assert.strictEqual(t(apiError(400, 'not a valid user name', {field: 'user'})), 'User name: not a valid user name');
    assert.strictEqual(t(apiError(400, 'longer than 255 bytes', {field: 'password'})), 'Password: longer than 255 bytes');
    assert.match(t(apiError(404, 'no identity provider')), /no LDAP server.*API token/);
    assert.strictEqual(t(apiError(0, 'sluiced did not answer: Failed to fetch')), 'sluiced did not answer: Failed to fetch');
    assert.strictEqual(t(apiError(500, 'boom')), 'boom');
});

test('errorText: starting and polling single sign-on', () => {
    assert.match(S.errorText(apiError(404, 'no OIDC provider'), 'start'), /no single sign-on configured.*API token/);
    assert.match(S.errorText(apiError(503, 'x'), 'start'), /identity provider cannot be reached.*API tokens still work/);
    assert.strictEqual(S.errorText(apiError(403, 'the sign-in was denied at the provider'), 'poll'),
        'Single sign-on did not complete: the sign-in was denied at the provider. Start again for a new code.');
    assert.strictEqual(S.errorText(apiError(403, 'the code expired.'), 'poll'),
        'Single sign-on did not complete: the code expired. Start again for a new code.');
    assert.match(S.errorText(apiError(401, 'audience mismatch'), 'poll'), /refused the identity provider's answer: audience mismatch\./);
});

test('retrySeconds: a number of seconds or an HTTP date', () => {
    assert.strictEqual(S.retrySeconds({retryAfter: '30'}), 30);
    assert.strictEqual(S.retrySeconds({retryAfter: ' 0 '}), 0);
    assert.strictEqual(S.retrySeconds({retryAfter: null}), null);
    assert.strictEqual(S.retrySeconds({}), null);
    assert.strictEqual(S.retrySeconds({retryAfter: 'soon'}), null);
    const now = Date.parse('2026-12-06T20:00:00Z');
    assert.strictEqual(S.retrySeconds({retryAfter: 'Sun, 06 Dec 2026 20:01:30 GMT'}, now), 90);
    assert.strictEqual(S.retrySeconds({retryAfter: 'Sun, 06 Dec 2026 19:00:00 GMT'}, now), 0);
});

test('safeUrl: only http and https addresses become links', () => {
    assert.strictEqual(S.safeUrl('https://idp.example.com/device?user_code=AB-CD'), 'https://idp.example.com/device?user_code=AB-CD');
    assert.strictEqual(S.safeUrl('http://127.0.0.1:8443/device'), 'http://127.0.0.1:8443/device');
    for (const u of ['javascript:alert(1)', 'data:text/html,x', '//idp/x', '', null, 42, 'https://a b'])
        assert.strictEqual(S.safeUrl(u), null, String(u));
});

/* A fake API and clock for the device flow: `answers` are what each POST
 * gives in turn (a body, or an Error-like {status} to reject with); timers
 * fire only when the test advances the clock. */
function harness(answers) {
    const h = {now: 1000000, timers: [], posts: [], events: [], nextId: 1};
    h.opts = {
        post: (p, b) => {
            h.posts.push({at: h.now, path: p, body: b});
            const a = answers.shift();
            if (a === undefined)
                return new Promise(() => {}); /* never answers */
            if (a instanceof Promise)
                return a;
            return a && a.status !== undefined && a.name === 'ApiError' ? Promise.reject(a) : Promise.resolve(a);
        },
        setTimer: (fn, ms) => {
            const t = {id: h.nextId++, at: h.now + ms, fn: fn, ms: ms};
            h.timers.push(t);
            return t.id;
        },
        clearTimer: (id) => {
            h.timers = h.timers.filter((t) => t.id !== id);
        },
        now: () => h.now,
        onCode: (c) => h.events.push(['code', c]),
        onWait: (w) => h.events.push(['wait', w]),
        onDone: (b) => h.events.push(['done', b]),
        onFail: (text, err) => h.events.push(['fail', text, err && err.status])
    };
    /* Let promise callbacks run. */
    h.settle = () => new Promise((r) => setImmediate(r));
    /* Move the clock to the next timer and fire it; returns the ms waited. */
    h.tick = async () => {
        await h.settle();
        assert.strictEqual(h.timers.length, 1, 'one timer pending, not ' + h.timers.length);
        const t = h.timers.shift();
        const waited = Math.max(0, t.at - h.now);
        h.now = Math.max(h.now, t.at); /* a timer may fire late, never early */
        t.fn();
        await h.settle();
        return waited;
    };
    return h;
}

const DEVICE = {device_code: 'dev-123', user_code: 'WDJB-MJHT', verification_uri: 'https://idp.example.com/device',
    verification_uri_complete: 'https://idp.example.com/device?user_code=WDJB-MJHT', interval: 5, expires_in: 600};
const TOKEN = {token: 'sl_tok', id: 3, user: 'ann', team: 'vision', role: 'member', expires_at: '2026-12-07T04:00:00Z'};

test('device flow: the code, a pending poll after the interval, then the token', async () => {
    const h = harness([DEVICE, {pending: true, interval: 5}, TOKEN]);
    const f = S.deviceFlow(h.opts);
    f.start();
    await h.settle();
    assert.deepStrictEqual(h.posts[0], {at: 1000000, path: '/v1/login/device', body: null});
    assert.deepStrictEqual(h.events[0], ['code', {userCode: 'WDJB-MJHT', uri: DEVICE.verification_uri_complete,
        expiresAt: 1000000 + 600000, interval: 5}]);
    assert.strictEqual(f.state(), 'waiting');
    assert.strictEqual(h.posts.length, 1, 'no poll before the interval');
    assert.strictEqual(await h.tick(), 5000);
    assert.deepStrictEqual(h.posts[1], {at: 1005000, path: '/v1/login', body: {device_code: 'dev-123'}});
    assert.deepStrictEqual(h.events[1], ['wait', {interval: 5, note: null}]);
    assert.strictEqual(await h.tick(), 5000);
    assert.deepStrictEqual(h.events[2], ['done', TOKEN]);
    assert.strictEqual(f.state(), 'done');
    assert.strictEqual(h.timers.length, 0, 'no timer left');
    assert.strictEqual(h.posts.length, 3);
});

test('device flow: a grown interval (slow_down) is honoured, a smaller one never polls faster', async () => {
    const h = harness([DEVICE, {pending: true, interval: 10}, {pending: true, interval: 2}, {pending: true}, TOKEN]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    assert.strictEqual(await h.tick(), 5000);
    assert.strictEqual(await h.tick(), 10000, 'after slow_down: 10 s');
    assert.strictEqual(await h.tick(), 10000, 'a smaller interval does not make it faster');
    assert.strictEqual(await h.tick(), 10000);
    assert.deepStrictEqual(h.events.map((e) => e[0]), ['code', 'wait', 'wait', 'wait', 'done']);
    const at = h.posts.map((p) => p.at - 1000000);
    assert.deepStrictEqual(at, [0, 5000, 15000, 25000, 35000]);
});

test('device flow: slow_down without an interval adds 5 s each time (RFC 8628)', async () => {
    const h = harness([DEVICE, {pending: true, slow_down: false}, {pending: true, slow_down: true},
        {pending: true, slow_down: true}, {pending: true, slow_down: false}, TOKEN]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    assert.strictEqual(await h.tick(), 5000);
    assert.strictEqual(await h.tick(), 5000);
    assert.strictEqual(await h.tick(), 10000, 'slow_down: 5 s more');
    assert.strictEqual(await h.tick(), 15000, 'again: 5 s more');
    assert.strictEqual(await h.tick(), 15000, 'and it stays');
    assert.deepStrictEqual(h.events.slice(1, 5).map((e) => e[1].interval), [5, 10, 15, 15]);
    assert.strictEqual(h.events[5][0], 'done');
});

test('device flow: without interval or expires_in, 5 s and 10 minutes; verification_uri without _complete', async () => {
    const h = harness([{device_code: 'd', user_code: 'ABCD', verification_uri: 'https://idp/device'}]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    assert.deepStrictEqual(h.events[0], ['code', {userCode: 'ABCD', uri: 'https://idp/device', expiresAt: 1000000 + 600000, interval: 5}]);
    assert.strictEqual(h.timers[0].ms, 5000);
});

test('device flow: 403 (denied or expired at the provider) stops with the server\'s reason', async () => {
    const h = harness([DEVICE, {pending: true, interval: 5}, apiError(403, 'the user denied the sign-in')]);
    const f = S.deviceFlow(h.opts);
    f.start();
    await h.settle();
    await h.tick();
    await h.tick();
    assert.deepStrictEqual(h.events[2], ['fail', 'Single sign-on did not complete: the user denied the sign-in. Start again for a new code.', 403]);
    assert.strictEqual(f.state(), 'failed');
    assert.strictEqual(h.timers.length, 0, 'no more polls');
});

test('device flow: 401 (token refused) stops', async () => {
    const h = harness([DEVICE, apiError(401, 'issuer mismatch')]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    await h.tick();
    assert.strictEqual(h.events[1][0], 'fail');
    assert.match(h.events[1][1], /refused the identity provider's answer: issuer mismatch/);
    assert.strictEqual(h.timers.length, 0);
});

test('device flow: the code expires on our clock too, without another poll', async () => {
    const h = harness([DEVICE, {pending: true, interval: 5}]);
    const f = S.deviceFlow(Object.assign(h.opts, {}));
    f.start();
    await h.settle();
    await h.tick();
    h.now += 600000; /* the tab slept: the next timer fires late */
    await h.tick();
    assert.strictEqual(h.posts.length, 2, 'no poll once expired');
    assert.deepStrictEqual(h.events[2], ['fail', 'The code expired before it was approved. Start again for a new code.', null]);
    assert.strictEqual(f.state(), 'failed');
});

test('device flow: 503, a network error and 429 while polling are passing; Retry-After when longer', async () => {
    const h = harness([DEVICE, apiError(503, 'provider down'), apiError(0, 'sluiced did not answer: x'),
        apiError(429, 'slow', {retryAfter: '30'}), TOKEN]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    assert.strictEqual(await h.tick(), 5000);
    assert.match(h.events[1][1].note, /identity provider cannot be reached/);
    assert.strictEqual(await h.tick(), 5000);
    assert.strictEqual(h.events[2][1].note, 'sluiced did not answer: x');
    assert.strictEqual(await h.tick(), 5000);
    assert.deepStrictEqual(h.events[3][1].interval, 30);
    assert.strictEqual(await h.tick(), 30000, 'the Retry-After');
    assert.strictEqual(h.events[4][0], 'done');
});

test('device flow: cancel stops the timer; a late answer is dropped', async () => {
    const h = harness([DEVICE, {pending: true, interval: 5}]);
    const f = S.deviceFlow(h.opts);
    f.start();
    await h.settle();
    await h.tick();
    assert.strictEqual(h.timers.length, 1);
    f.cancel();
    assert.strictEqual(f.state(), 'cancelled');
    assert.strictEqual(h.timers.length, 0, 'cancel clears the timer');
    assert.strictEqual(h.events.length, 2, 'no event after cancel');

    /* cancelled while a poll is on its way: its answer changes nothing */
    let answer;
    const h2 = harness([DEVICE, new Promise((r) => {
        answer = r;
    })]);
    const f2 = S.deviceFlow(h2.opts);
    f2.start();
    await h2.settle();
    await h2.tick();
    f2.cancel();
    answer(TOKEN);
    await h2.settle();
    assert.deepStrictEqual(h2.events.map((e) => e[0]), ['code']);
    assert.strictEqual(h2.timers.length, 0);

    /* cancelled before the code came */
    let code;
    const h3 = harness([new Promise((r) => {
        code = r;
    })]);
    const f3 = S.deviceFlow(h3.opts);
    f3.start();
    f3.cancel();
    code(DEVICE);
    await h3.settle();
    assert.deepStrictEqual(h3.events, []);
    assert.strictEqual(h3.timers.length, 0);
});

test('device flow: starting fails clearly (404 no OIDC, 503, an answer without a code or a safe link)', async () => {
    const cases = [
        [apiError(404, 'no OIDC provider is configured'), /no single sign-on configured/],
        [apiError(503, 'unreachable'), /cannot be reached.*API tokens still work/],
        [{user_code: 'X', verification_uri: 'https://idp/d'}, /no usable sign-in code/],
        [Object.assign({}, DEVICE, {verification_uri: 'javascript:alert(1)', verification_uri_complete: undefined}), /no usable sign-in code/]
    ];
    for (const [a, re] of cases) {
        const h = harness([a]);
        const f = S.deviceFlow(h.opts);
        f.start();
        await h.settle();
        assert.strictEqual(h.events.length, 1);
        assert.strictEqual(h.events[0][0], 'fail');
        assert.match(h.events[0][1], re);
        assert.strictEqual(f.state(), 'failed');
        assert.strictEqual(h.timers.length, 0);
    }
});

test('device flow: start again after a failure gets a new code; start while waiting does nothing', async () => {
    const h = harness([DEVICE, apiError(403, 'expired'), Object.assign({}, DEVICE, {device_code: 'dev-2'}), TOKEN]);
    const f = S.deviceFlow(h.opts);
    f.start();
    f.start();
    await h.settle();
    assert.strictEqual(h.posts.length, 1, 'one code asked for');
    await h.tick();
    assert.strictEqual(f.state(), 'failed');
    f.start();
    await h.settle();
    await h.tick();
    assert.deepStrictEqual(h.posts.map((p) => p.body && p.body.device_code), [null, 'dev-123', null, 'dev-2']);
    assert.strictEqual(h.events[h.events.length - 1][0], 'done');
});

test('device flow: an unknown 2xx answer while polling stops', async () => {
    const h = harness([DEVICE, {hello: 1}]);
    S.deviceFlow(h.opts).start();
    await h.settle();
    await h.tick();
    assert.match(h.events[1][1], /does not know/);
    assert.strictEqual(h.timers.length, 0);
});
