/*
 * 02-sso.js - single sign-on on the login page: the device flow's screens
 * against sluiced's sign-in answers played by the test (page routes for
 * GET /v1/login, POST /v1/login/device and POST /v1/login; whoami and the
 * rest are the real sluiced, so the token the flow ends with is alice's
 * real one; the answers' shapes are sluiced's). The code shown large with a link that opens the provider in a
 * new tab; polls no faster than the interval, a grown one honoured; a
 * denial with Start again; Cancel and leaving the page stop the polls; an
 * unreachable provider said so.
 */
'use strict';

const LOGIN_INFO = {methods: ['token', 'oidc'], oidc: {issuer: 'https://idp.example.com/realms/corp', client_id: 'sluice'}};

function device(n) {
    return {device_code: 'dev-' + n, user_code: 'WDJB-MJH' + n, verification_uri: 'https://idp.example.com/device',
        verification_uri_complete: 'https://idp.example.com/device?user_code=WDJB-MJH' + n, interval: 1, expires_in: 300};
}

/* A context whose sign-in answers come from `script`: {device: [answer],
 * poll: [answer]}, an answer {status, body, headers}; what was asked is
 * logged in `log` ({what, at, body}). */
async function scripted(env, script) {
    const log = [];
    const ctx = await env.newContext(null);
    await ctx.route((u) => /^\/v1\/login(\/device)?$/.test(u.pathname), async (route) => {
        const req = route.request();
        const p = new URL(req.url()).pathname;
        let a;
        if (req.method() === 'GET' && p === '/v1/login') {
            a = {status: 200, body: LOGIN_INFO};
        } else if (req.method() === 'POST' && p === '/v1/login/device') {
            log.push({what: 'device', at: Date.now()});
            a = script.device.shift();
        } else if (req.method() === 'POST' && p === '/v1/login') {
            log.push({what: 'poll', at: Date.now(), body: req.postDataJSON()});
            a = script.poll.shift();
        }
        if (!a)
            return route.fulfill({status: 500, contentType: 'application/json', body: '{"error":{"code":"test","message":"unscripted"}}'});
        return route.fulfill({status: a.status, contentType: 'application/json', headers: a.headers || {},
            body: JSON.stringify(a.body)});
    });
    const page = await ctx.newPage();
    return {ctx, page, log};
}

async function ssoError(page, re) {
    await page.waitForFunction((src) => new RegExp(src).test((document.querySelector('.signin-sso .signin-error') || {}).textContent),
        re.source);
    return (await page.textContent('.signin-sso .signin-error')).trim();
}

/* Wait `ms` of wall time: only where the check is that nothing happens. */
function quiet(page, ms) {
    return page.waitForTimeout(ms);
}

module.exports = async function (t, env) {
    /* --- approved after two pending answers, one of them slow_down -------- */
    const alice = env.tokens.alice;
    const a = await scripted(env, {
        device: [{status: 200, body: device(1)}],
        poll: [{status: 202, body: {pending: true, slow_down: false}}, {status: 202, body: {pending: true, slow_down: true}},
            {status: 201, body: {token: alice, id: 1, user: 'alice', team: 'vision', role: 'member', expires_at: '2099-01-01T00:00:00Z'}}]
    });
    await a.page.goto(env.base + 'queues');
    await a.page.waitForSelector('.signin-sso button');
    const start = a.page.getByRole('button', {name: 'Sign in with single sign-on'});
    t.ok(await start.isVisible(), 'GET /v1/login says oidc: the single sign-on button');
    t.like(await a.page.textContent('.signin-sso'), /idp\.example\.com/, '... naming the provider\'s host');
    t.is(await a.page.locator('form.signin-password').count(), 0, 'no password form without "password"');
    t.ok(await a.page.isVisible('form.login-token'), 'the token form stays');
    await t.screenshot(a.page, '02-sso-offer');

    await start.click();
    await a.page.waitForSelector('.user-code');
    t.is((await a.page.textContent('.user-code')).trim(), 'WDJB-MJH1', 'the user code is shown');
    t.ok(await a.page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('.user-code')).fontSize) >= 28),
        '... large');
    const link = a.page.locator('.signin-sso a.device-link');
    t.is([await link.getAttribute('href'), await link.getAttribute('target'), await link.getAttribute('rel')],
        ['https://idp.example.com/device?user_code=WDJB-MJH1', '_blank', 'noopener noreferrer'],
        'the link to verification_uri_complete opens a new tab, without opener or referrer');
    t.like(await a.page.textContent('.device-status'), /Waiting for you to approve \(checked every 1 s\); the code expires at/,
        'it says it waits, how often it asks and when the code expires');
    await t.screenshot(a.page, '02-sso-code');

    await a.page.waitForFunction(() => location.pathname === '/ui/queues' && !!document.querySelector('#top:not([hidden])'));
    t.pass('approved: signed in, on the page asked for first');
    t.like(await a.page.textContent('#who'), /alice/, 'the header says alice');
    t.like(await a.page.getAttribute('#who .who-name', 'title'), /signed in until 2099-/, 'the tooltip gives the token\'s expiry');
    const polls = a.log.filter((x) => x.what === 'poll');
    t.is(polls.map((x) => x.body), [{device_code: 'dev-1'}, {device_code: 'dev-1'}, {device_code: 'dev-1'}],
        'three polls with the device code');
    const gaps = a.log.slice(1).map((x, i) => x.at - a.log[i].at);
    t.ok(gaps[0] >= 950 && gaps[1] >= 950 && gaps[2] >= 5950,
        'no faster than the interval, and 5 s more after slow_down', JSON.stringify(gaps));
    await a.ctx.close();

    /* --- denied; start again; cancel -------------------------------------- */
    const b = await scripted(env, {
        device: [{status: 200, body: device(2)}, {status: 200, body: device(3)}],
        poll: [{status: 403, body: {error: {code: 'forbidden', message: 'the sign-in was denied at the provider'}}},
            {status: 202, body: {pending: true, slow_down: false}}, {status: 202, body: {pending: true, slow_down: false}},
            {status: 202, body: {pending: true, slow_down: false}}]
    });
    await b.page.goto(env.base + 'login');
    await b.page.getByRole('button', {name: 'Sign in with single sign-on'}).click();
    t.like(await ssoError(b.page, /denied/),
        /Single sign-on did not complete: the sign-in was denied at the provider\. Start again for a new code\./,
        'denied at the provider: said so');
    t.is(await b.page.locator('.user-code').count(), 0, '... the code is gone');
    const again = b.page.getByRole('button', {name: 'Start again'});
    t.ok(await again.isVisible(), '... and Start again is offered');
    await t.screenshot(b.page, '02-sso-denied');
    await again.click();
    await b.page.waitForFunction(() => (document.querySelector('.user-code') || {}).textContent === 'WDJB-MJH3');
    t.pass('Start again gets a new code');
    t.is(await b.page.textContent('.signin-sso .signin-error'), '', '... and the old message goes');
    await b.page.waitForFunction(() => /checked every/.test(document.querySelector('.device-status').textContent));
    await b.page.getByRole('button', {name: 'Cancel'}).click();
    const n = b.log.length;
    t.like(await ssoError(b.page, /cancelled/), /Single sign-on cancelled/, 'Cancel: said so');
    t.ok(await b.page.getByRole('button', {name: 'Sign in with single sign-on'}).isVisible(), '... the button is back');
    await quiet(b.page, 2500);
    t.is(b.log.length, n, 'no poll after Cancel', JSON.stringify(b.log.slice(n)));
    await b.ctx.close();

    /* --- leaving the page stops it ----------------------------------------- */
    const c = await scripted(env, {
        device: [{status: 200, body: device(4)}],
        poll: [{status: 202, body: {pending: true, slow_down: false}}, {status: 202, body: {pending: true, slow_down: false}},
            {status: 202, body: {pending: true, slow_down: false}}, {status: 202, body: {pending: true, slow_down: false}}]
    });
    await c.page.goto(env.base + 'login');
    await c.page.getByRole('button', {name: 'Sign in with single sign-on'}).click();
    await c.page.waitForSelector('.user-code');
    await c.page.evaluate(() => App.navigate('/ui/login?next=%2Fui%2Fnodes'));
    const m = c.log.length;
    await quiet(c.page, 2500);
    t.is(c.log.filter((x, i) => i >= m && x.what === 'poll').length, 0, 'leaving the page stops the polls');
    await c.ctx.close();

    /* --- the provider cannot be reached ------------------------------------ */
    t.allowConsole(/status of 503/);
    const d = await scripted(env, {
        device: [{status: 503, headers: {'Retry-After': '5'}, body: {error: {code: 'unavailable', message: 'the identity provider does not answer'}}}],
        poll: []
    });
    await d.page.goto(env.base + 'login');
    await d.page.getByRole('button', {name: 'Sign in with single sign-on'}).click();
    t.like(await ssoError(d.page, /reached/), /identity provider cannot be reached.*API tokens still work/,
        '503: the provider cannot be reached, tokens still work');
    await d.page.getByLabel('API token').fill(alice);
    await d.page.getByRole('button', {name: 'Log in'}).click();
    await d.page.waitForSelector('#top:not([hidden])');
    t.pass('... and a pasted token does');
    await d.ctx.close();
};
