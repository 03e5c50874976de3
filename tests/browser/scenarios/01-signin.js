/*
 * 01-signin.js - signing in with a directory password: a sluiced of its
 * own with an identity file naming a real slapd (tests/browser/idp.py).
 * The login page offers the password form because GET /v1/login says
 * "password" (the shared sluiced has no identity file: 00-login sees the
 * token form alone); a wrong password, a user in no mapped group, a name
 * that is a local account and too many failures each get their message;
 * the password is cleared from the input and kept nowhere; the right one
 * signs in, goes to the page asked for, and the header says until when.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const H = require('../harness.js');

async function errorText(page) {
    await page.waitForSelector('.signin-password .signin-error .msg');
    return (await page.textContent('.signin-password .signin-error')).trim();
}

module.exports = async function (t, env) {
    const contexts = [];  /* closed before the second sluiced stops */
    const track = async (p) => {
        const c = await p;
        contexts.push(c);
        return c;
    };
    const dir = fs.mkdtempSync(path.join(env.tmp, 'idp.'));
    fs.chmodSync(dir, 0o711);
    const idp = await H.startIdp(dir);
    let s = null;
    try {
        if (idp.info.skip) {
            t.skip('signing in with a password', idp.info.skip);
            return;
        }
        t.ok(!idp.info.error, 'slapd serves the test directory', idp.info.error);
        s = await H.startSluiced({fakeGpus: '1xH100', args: ['--identity', idp.info.identity]});
        const applied = await s.api(s.token, 'POST', '/v1/apply',
            'apiVersion: sluice/v1\nkind: Team\nmetadata: {name: nlp}\n---\n' +
            'apiVersion: sluice/v1\nkind: Team\nmetadata: {name: platform}\n');
        t.is(applied.status, 200, 'teams nlp and platform applied');
        const info = await s.api(null, 'GET', '/v1/login');
        t.is(info.json && info.json.methods, ['token', 'password'], 'GET /v1/login offers a token and a password');

        const ctx = await track(env.newContext(null));
        const page = await ctx.newPage();
        const urls = [];
        ctx.on('request', (r) => urls.push(r.url() + ' ' + (r.postData() || '').replace(/"password":"[^"]*"/, '"password":…')));
        await page.goto(s.url + '/ui/jobs');
        await page.waitForSelector('form.signin-password');
        t.is(await page.textContent('main h1'), 'Log in to Sluice', 'the login page');
        const user = page.getByLabel('User name');
        const pw = page.getByLabel('Password', {exact: true});
        t.is([await user.getAttribute('autocomplete'), await pw.getAttribute('type'), await pw.getAttribute('autocomplete')],
            ['username', 'password', 'current-password'], 'user name and password fields: labelled, masked, autocomplete right');
        t.ok(await user.evaluate((el) => el === document.activeElement), 'the user name has the focus');
        t.ok(await page.isVisible('form.login-token'), 'the token form is still there');
        t.is(await page.locator('.signin-sso').count(), 0, 'no single sign-on without an OIDC provider');
        await t.screenshot(page, '01-signin-password');

        const signIn = page.getByRole('button', {name: 'Sign in', exact: true});
        await signIn.click();
        t.like(await errorText(page), /Enter your user name/, 'nothing entered: asked for the user name');

        await user.fill('alice');
        await pw.fill('wrong-pw');
        await signIn.click();
        await page.waitForFunction(() => /Wrong/.test(document.querySelector('.signin-password .signin-error').textContent));
        t.is(await errorText(page), 'Wrong user name or password.', 'a wrong password: said so');
        t.is(await pw.inputValue(), '', '... and the password input is cleared');

        await user.fill('carol');
        await pw.fill('carol-pw');
        await signIn.click();
        await page.waitForFunction(() => /no access/.test(document.querySelector('.signin-password .signin-error').textContent));
        t.like(await errorText(page), /password is right, but sluiced gives your account no access: .*administrator/,
            'a user in no mapped group: no access, and whom to ask');

        await user.fill('admin');
        await pw.fill('admin-pw');
        await signIn.click();
        await page.waitForFunction(() => /local Sluice account/.test(document.querySelector('.signin-password .signin-error').textContent));
        t.like(await errorText(page), /^"admin" is a local Sluice account.*API token/, 'the name of a local account: use its token');

        for (let i = 0; i < 5; i++)
            await s.api(null, 'POST', '/v1/login', {user: 'bob', password: 'guess-' + i});
        await user.fill('bob');
        await pw.fill('bob-pw');
        await signIn.click();
        await page.waitForFunction(() => /Too many/.test(document.querySelector('.signin-password .signin-error').textContent));
        t.like(await errorText(page), /^Too many failed sign-ins for this name or address\. Try again in \d+ (seconds?|minutes)\.$/,
            'too many failures: 429 with the wait its Retry-After gives');
        await t.screenshot(page, '01-signin-429');

        await user.fill('alice');
        await pw.fill('alice-pw');
        await signIn.click();
        await page.waitForFunction(() => location.pathname === '/ui/jobs' && !!document.querySelector('#top:not([hidden])'));
        t.pass('alice signs in with her password and goes to the page asked for');
        t.like(await page.textContent('#who'), /alice\s+member · nlp/, 'the header: alice, member of nlp (her group\'s rule)');
        t.like(await page.getAttribute('#who .who-name', 'title'), /signed in until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/,
            'the header\'s tooltip says until when the token holds');
        const kept = await page.evaluate(() => ({session: Object.assign({}, sessionStorage), local: Object.assign({}, localStorage)}));
        t.ok(/^\S+$/.test(kept.session['sluice.token'] || '') && !isNaN(Date.parse(kept.session['sluice.expires'])),
            'the token and its expiry are in the tab\'s sessionStorage', JSON.stringify(Object.keys(kept.session)));
        const all = JSON.stringify(kept) + (await page.content());
        t.ok(!/alice-pw|bob-pw|carol-pw|admin-pw/.test(all), 'no password in storage or the page');
        t.ok(!urls.some((u) => /-pw/.test(u.split(' ')[0])), 'no password in a URL');
        await t.screenshot(page, '01-signin-done');

        /* a phone, and dark */
        const narrow = await track(env.newContext(null, {viewport: {width: 390, height: 844}, colorScheme: 'dark'}));
        const np = await narrow.newPage();
        await np.goto(s.url + '/ui/login');
        await np.waitForSelector('form.signin-password');
        t.ok(!(await np.evaluate(() => document.documentElement.scrollWidth > window.innerWidth)),
            '390 px: the login page with the password form does not scroll sideways');
        await t.screenshot(np, '01-signin-narrow-dark');
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
