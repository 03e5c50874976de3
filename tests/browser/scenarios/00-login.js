/*
 * 00-login.js - the dashboard's shell: the login page, a refused and an
 * accepted token, where the token is kept (sessionStorage of the tab, never
 * a URL, a cookie or localStorage), logout, reload, a new tab, the
 * navigation each role sees, back and forward, the keyboard and its visible
 * focus, light and dark themes, a phone-wide viewport.
 */
'use strict';

const NAV_ALL = ['Overview', 'Nodes', 'Queues', 'Jobs', 'Submit', 'Teams & cost', 'Audit', 'Models'];

async function h1(page) {
    return (await page.textContent('main h1')).trim();
}

async function navLinks(page) {
    return page.$$eval('#nav a', (as) => as.map((a) => ({text: a.textContent.trim(), href: a.getAttribute('href')})));
}

/* What the tab keeps: its sessionStorage, localStorage and cookies. */
async function stored(page) {
    return page.evaluate(() => ({
        session: Object.assign({}, sessionStorage),
        local: Object.assign({}, localStorage),
        cookie: document.cookie
    }));
}

/* The page at `path` shows, with its h1. */
async function shows(page, path) {
    await page.waitForFunction((p) => location.pathname + location.search === p && !!document.querySelector('main h1'), path);
}

/* sRGB "rgb(r, g, b)" -> relative luminance 0..1. */
function luminance(css) {
    const m = /rgba?\((\d+), (\d+), (\d+)/.exec(css);
    if (!m)
        return NaN;
    const c = [m[1], m[2], m[3]].map((v) => {
        const x = Number(v) / 255;
        return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

/* The body scrolls sideways: wider than the viewport. */
async function overflowsX(page) {
    return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth ||
        document.body.scrollWidth > window.innerWidth);
}

module.exports = async function (t, env) {
    const {base, tokens} = env;
    const alice = tokens.alice;

    /* --- the login page, a wrong token, the right one ---------------------- */
    const page = await env.newPage(null, {path: null});
    const ctx = page.context();
    const urls = [];
    ctx.on('request', (r) => urls.push(r.url()));

    await page.goto(base + 'jobs?state=Pending');
    await env.ready(page);
    t.is(new URL(page.url()).pathname, '/ui/login', 'without a token, a page sends to the login page');
    t.is(new URL(page.url()).searchParams.get('next'), '/ui/jobs?state=Pending', '... which remembers where to go next');
    t.is(await h1(page), 'Log in to Sluice', 'the login page has its h1');
    t.ok(await page.isHidden('#top'), 'the navigation is hidden before login');
    const field = page.getByLabel('API token');
    t.is(await field.getAttribute('type'), 'password', 'the token field is labelled and masked');
    t.ok(await field.evaluate((el) => el === document.activeElement), 'the token field has the focus');

    await page.getByRole('button', {name: 'Log in'}).click();
    await page.waitForSelector('.login-error .msg');
    t.like(await page.textContent('.login-error'), /Enter a token/, 'an empty token: asked for one');

    await field.fill('sl_this-is-not-a-token');
    await page.getByRole('button', {name: 'Log in'}).click();
    await page.waitForFunction(() => /accept/.test(document.querySelector('.login-error').textContent));
    t.like(await page.textContent('.login-error'),
        /sluiced does not accept this token \(unknown, expired or revoked\)/, 'a wrong token: refused with a clear message');
    t.is(await page.getAttribute('.login-error [role=alert]', 'role'), 'alert', '... read out as an alert');
    t.is((await stored(page)).session['sluice.token'], undefined, '... and not kept');
    t.is(new URL(page.url()).pathname, '/ui/login', '... still on the login page');

    await field.fill(alice);
    await page.getByRole('button', {name: 'Log in'}).click();
    await shows(page, '/ui/jobs?state=Pending');
    t.pass('the right token logs in and goes to the page asked for first');
    t.ok(await page.isVisible('#top'), 'the navigation shows');
    t.like(await page.textContent('#who'), /alice\s+member · vision/, 'the header says who: alice, member of vision');
    await t.screenshot(page, '00-login-done');

    let s = await stored(page);
    t.is(s.session['sluice.token'], alice, 'the token is in the tab\'s sessionStorage');
    t.ok(!Object.values(s.local).some((v) => String(v).includes(alice)) && Object.keys(s.local).length === 0,
        'localStorage holds nothing', JSON.stringify(s.local));
    t.is(s.cookie, '', 'no cookie readable by the page');
    t.is((await ctx.cookies()).length, 0, 'no cookie at all');
    t.ok(!page.url().includes(alice), 'the token is not in the URL');

    /* --- reload, a new tab ----------------------------------------------- */
    await page.reload();
    await shows(page, '/ui/jobs?state=Pending');
    await page.waitForSelector('#top:not([hidden])');
    t.like(await page.textContent('#who'), /alice/, 'a reload keeps the session in the same tab');

    const tab2 = await ctx.newPage();
    await tab2.goto(base);
    await env.ready(tab2);
    t.is(new URL(tab2.url()).pathname, '/ui/login', 'a new tab logs in again (sessionStorage is per tab)');
    await tab2.close();

    /* --- navigation, back and forward ------------------------------------ */
    const links = await navLinks(page);
    t.is(links.map((l) => l.text), NAV_ALL.filter((x) => x !== 'Audit'),
        'a member\'s navigation: every page but Audit');
    const visited = [];
    for (const l of links) {
        await page.click('#nav a[href="' + l.href + '"]');
        await shows(page, l.href);
        const title = await h1(page);
        visited.push({href: l.href, title});
        t.ok(title.length > 0 && title !== 'Not found', l.text + ': ' + l.href + ' shows its page, with an h1 ("' + title + '")');
        t.is(await page.getAttribute('#nav a[aria-current="page"]', 'href'), l.href, l.text + ': marked as the current page');
        t.is(await page.evaluate(() => document.querySelectorAll('main h1').length), 1, l.text + ': one h1');
    }
    let backOk = true;
    for (let i = visited.length - 2; i >= 0; i--) {
        await page.goBack();
        await shows(page, visited[i].href);
        if (await h1(page) !== visited[i].title)
            backOk = false;
    }
    t.ok(backOk, 'back goes through every page in turn, each showing its h1 again');
    await page.goBack();
    await shows(page, '/ui/jobs?state=Pending');
    t.pass('... to the first page');
    await page.goForward();
    await shows(page, visited[0].href);
    await page.goForward();
    await shows(page, visited[1].href);
    t.is(await h1(page), visited[1].title, 'forward works too');

    /* --- the keyboard ----------------------------------------------------- */
    await page.goto(base);
    await env.ready(page);
    await page.waitForSelector('#top:not([hidden])');
    const reached = [];
    let outline = null;
    for (let i = 0; i < 40 && reached.length < 40; i++) {
        await page.keyboard.press('Tab');
        const f = await page.evaluate(() => {
            const el = document.activeElement;
            const cs = getComputedStyle(el);
            return {
                tag: el.tagName, text: (el.textContent || '').trim(), nav: !!el.closest('#nav'),
                href: el.getAttribute('href'), outline: cs.outlineStyle + ' ' + cs.outlineWidth,
                visible: el.matches(':focus-visible')
            };
        });
        reached.push(f);
        if (f.nav && !outline)
            outline = f;
        if (f.tag === 'BUTTON' && f.text === 'Log out')
            break;
    }
    t.is(reached[0] && reached[0].text, 'Skip to content', 'the first Tab reaches the skip link');
    t.is(reached.filter((f) => f.nav).map((f) => f.text), links.map((l) => l.text), 'Tab reaches every nav link, in order');
    t.ok(reached.some((f) => f.text === 'Log out'), 'Tab reaches the logout button');
    t.ok(outline && outline.visible && !/^none /.test(outline.outline) && !/ 0px$/.test(outline.outline),
        'a focused nav link shows its focus', JSON.stringify(outline));
    await t.screenshot(page, '00-focus');
    /* Enter on the focused link follows it. */
    await page.focus('#nav a[href="/ui/jobs"]');
    await page.keyboard.press('Enter');
    await shows(page, '/ui/jobs');
    t.pass('Enter on a nav link opens its page');
    t.ok(await page.evaluate(() => {
        const a = document.activeElement;
        return a && (a.tagName === 'H1' || a.id === 'main');
    }), 'the focus moves to the new page\'s heading');

    /* --- logout ----------------------------------------------------------- */
    await page.getByRole('button', {name: 'Log out'}).click();
    await shows(page, '/ui/login');
    s = await stored(page);
    t.is(s.session['sluice.token'], undefined, 'logout drops the token');
    t.ok(await page.isHidden('#top'), '... and hides the navigation');
    await page.reload();
    await env.ready(page);
    t.is(await h1(page), 'Log in to Sluice', 'after logout, a reload shows the login page');
    await page.goBack();
    await env.ready(page);
    t.is(new URL(page.url()).pathname, '/ui/login', 'after logout, back shows the login page, not the page left');
    t.ok(!urls.some((u) => u.includes(alice)), 'no request URL ever held the token', urls.filter((u) => u.includes(alice)).join('\n'));

    /* --- what each role's navigation offers -------------------------------- */
    const roles = [
        ['admin', NAV_ALL],
        ['victor', NAV_ALL.filter((x) => x !== 'Submit' && x !== 'Audit')],
        ['audrey', NAV_ALL.filter((x) => x !== 'Submit')],
        ['bob', NAV_ALL.filter((x) => x !== 'Audit')]
    ];
    for (const [who, want] of roles) {
        const p = await env.newPage(tokens[who]);
        await p.waitForSelector('#top:not([hidden])');
        t.is((await navLinks(p)).map((l) => l.text), want, who + ' (' + env.users[who].role + ') sees ' + want.length + ' pages in the navigation');
        await p.context().close();
    }

    /* --- light and dark ---------------------------------------------------- */
    const bg = {};
    for (const scheme of ['light', 'dark']) {
        const lp = await env.newPage(null, {colorScheme: scheme, path: 'login'});
        await t.screenshot(lp, '00-login-' + scheme);
        const shell = await env.newPage(tokens.admin, {colorScheme: scheme});
        await shell.waitForSelector('#top:not([hidden])');
        await t.screenshot(shell, '00-shell-' + scheme);
        bg[scheme] = await shell.evaluate(() => {
            const b = getComputedStyle(document.body);
            return {bg: b.backgroundColor, fg: b.color};
        });
        await lp.context().close();
        await shell.context().close();
    }
    t.ok(luminance(bg.light.bg) > 0.8 && luminance(bg.light.fg) < 0.1, 'light: dark text on a light page', JSON.stringify(bg.light));
    t.ok(luminance(bg.dark.bg) < 0.05 && luminance(bg.dark.fg) > 0.6, 'dark: light text on a dark page (the system\'s setting)', JSON.stringify(bg.dark));

    /* --- a phone ----------------------------------------------------------- */
    const phone = {viewport: {width: 390, height: 844}};
    const pl = await env.newPage(null, Object.assign({path: 'login'}, phone));
    t.ok(!(await overflowsX(pl)), '390 px: the login page does not scroll sideways');
    await t.screenshot(pl, '00-login-narrow');
    await pl.context().close();
    const pn = await env.newPage(tokens.admin, phone);
    await pn.waitForSelector('#top:not([hidden])');
    const rows = await pn.$$eval('#nav li', (lis) => new Set(lis.map((li) => Math.round(li.getBoundingClientRect().top))).size);
    t.ok(rows > 1, '390 px: the navigation wraps (' + rows + ' rows)');
    const outside = await pn.$$eval('#nav a, #logout', (els) => els.filter((e) => {
        const r = e.getBoundingClientRect();
        return r.left < 0 || r.right > window.innerWidth;
    }).map((e) => e.textContent));
    t.is(outside, [], '390 px: every nav link and the logout button are within the screen');
    t.ok(!(await overflowsX(pn)), '390 px: the shell does not scroll sideways');
    await t.screenshot(pn, '00-shell-narrow');
    await pn.context().close();
};
