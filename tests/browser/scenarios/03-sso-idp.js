/*
 * 03-sso-idp.js - single sign-on end to end: a sluiced of its own whose
 * identity file names slapd and the fake OIDC provider
 * (tests/browser/idp.py --oidc, tests/idp/fake_idp.py over HTTPS). The
 * login page offers all three ways; the device flow shows the provider's
 * code and link; the test approves the code at the provider (as the user
 * would in the other tab), after a slow_down the page waits 5 s more, and
 * the page signs in as the user with the team and role of the provider's
 * groups claim. A denied code says so and offers Start again.
 */
'use strict';

const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const H = require('../harness.js');

/* POST a test endpoint of the provider (/approve, /deny, /slowdown). */
function provider(info, what, body) {
    return new Promise((resolve, reject) => {
        const req = https.request(info.issuer + what, {method: 'POST', ca: fs.readFileSync(info.ca),
            headers: {'Content-Type': 'application/json'}}, (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({status: res.statusCode, text}));
        });
        req.on('error', reject);
        req.end(JSON.stringify(body));
    });
}

async function codeShown(page) {
    await page.waitForSelector('.user-code');
    return (await page.textContent('.user-code')).trim();
}

module.exports = async function (t, env) {
    const contexts = [];  /* closed before the second sluiced stops */
    const track = async (p) => {
        const c = await p;
        contexts.push(c);
        return c;
    };
    const dir = fs.mkdtempSync(path.join(env.tmp, 'oidc.'));
    fs.chmodSync(dir, 0o711);
    const idp = await H.startIdp(dir, '--oidc');
    let s = null;
    try {
        if (idp.info.skip) {
            t.skip('single sign-on through the fake provider', idp.info.skip);
            return;
        }
        t.ok(!idp.info.error && idp.info.issuer, 'slapd and the fake OIDC provider run', idp.info.error);
        s = await H.startSluiced({fakeGpus: '1xH100', args: ['--identity', idp.info.identity]});
        const applied = await s.api(s.token, 'POST', '/v1/apply',
            'apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n' +
            'apiVersion: sluice/v1\nkind: Team\nmetadata: {name: platform}\n');
        t.is(applied.status, 200, 'teams nlp and platform applied');
        const info = await s.api(null, 'GET', '/v1/login');
        t.is(info.json && info.json.methods, ['token', 'password', 'oidc'], 'GET /v1/login offers a token, a password and oidc');

        /* --- approved, after a slow_down ------------------------------------ */
        const ctx = await track(env.newContext(null));
        const page = await ctx.newPage();
        await page.goto(s.url + '/ui/jobs');
        await page.waitForSelector('.signin-sso button');
        await page.waitForSelector('form.signin-password');
        t.ok(await page.isVisible('form.login-token'), 'the login page offers single sign-on, a password and a token');
        t.like(await page.textContent('.signin-sso'), /at 127\.0\.0\.1:\d+/, 'single sign-on names the provider');
        await t.screenshot(page, '03-sso-idp-offer');

        await page.getByRole('button', {name: 'Sign in with single sign-on'}).click();
        const code = await codeShown(page);
        t.like(code, /^[0-9A-F]{4}-[0-9A-F]{4}$/, 'the provider\'s user code is shown (' + code + ')');
        t.is(await page.getAttribute('.signin-sso a.device-link', 'href'), idp.info.issuer + '/activate?user_code=' + code,
            'the link is the provider\'s verification_uri_complete');
        t.is((await provider(idp.info, '/slowdown', {user_code: code})).status, 200, 'the provider is asked to say slow_down');
        await page.waitForFunction(() => /checked every 6 s/.test(document.querySelector('.device-status').textContent));
        t.pass('after slow_down the page waits 5 s more (every 6 s)');
        await t.screenshot(page, '03-sso-idp-code');
        t.is((await provider(idp.info, '/approve', {user_code: code, user: 'alice', groups: ['nlp']})).status, 200,
            'alice approves the code at the provider');
        await page.waitForFunction(() => location.pathname === '/ui/jobs' && !!document.querySelector('#top:not([hidden])'),
            null, {timeout: 20000});
        t.pass('the page signs in and goes to the page asked for');
        t.like(await page.textContent('#who'), /alice\s+member · nlp/, 'as alice, member of nlp (her groups claim)');
        t.like(await page.getAttribute('#who .who-name', 'title'), /signed in until \d{4}-/, 'the tooltip says until when');
        const whoami = await page.evaluate(() => fetch('/v1/whoami', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('sluice.token')}})
            .then((r) => r.json()));
        t.is(whoami, {user: 'alice', team: 'nlp', role: 'member'}, 'the token the page keeps is alice\'s');
        await t.screenshot(page, '03-sso-idp-done');

        /* --- denied ----------------------------------------------------------- */
        const p2 = await (await track(env.newContext(null))).newPage();
        await p2.goto(s.url + '/ui/login');
        await p2.getByRole('button', {name: 'Sign in with single sign-on'}).click();
        const code2 = await codeShown(p2);
        t.is((await provider(idp.info, '/deny', {user_code: code2})).status, 200, 'the next code is denied at the provider');
        await p2.waitForSelector('.signin-sso .signin-error .msg');
        t.like(await p2.textContent('.signin-sso .signin-error'), /^Single sign-on did not complete: the sign-in was not approved.*Start again/,
            'the page says it was not approved');
        t.ok(await p2.getByRole('button', {name: 'Start again'}).isVisible(), '... and offers Start again');
        await p2.getByRole('button', {name: 'Start again'}).click();
        const code3 = await codeShown(p2);
        t.isnt(code3, code2, 'Start again gets a new code from the provider');
        await p2.getByRole('button', {name: 'Cancel'}).click();
        await t.screenshot(p2, '03-sso-idp-cancelled');
    } finally {
        /* the pages first: a page left open would refresh against a
         * stopped sluiced */
        for (const c of contexts)
            await c.close().catch(() => {});
        if (s) {
            const rc = await s.stop();
            t.is(rc, 0, 'the second sluiced exits cleanly', s.logTail);
        }
        idp.child.stdin.end();
        await new Promise((r) => (idp.child.exitCode !== null ? r() : idp.child.on('exit', r)));
    }
};
