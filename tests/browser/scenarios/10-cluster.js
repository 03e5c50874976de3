/*
 * 10-cluster.js - the cluster's pages, as an admin sees them:
 *  - Overview (/ui/): the GPUs now (a job of alice's allocates one), by GPU
 *    model and by node, running and pending jobs, the history charts of
 *    GET /v1/history (or, from a sluiced without it, the page saying so);
 *    the range buttons change the URL, back and forward restore them; a
 *    member's history is its team's.
 *  - Nodes (/ui/nodes): a tile per GPU with its holder job and team and
 *    "not measured" (fake GPUs); the filters in the URL; cordon with a
 *    reason and uncordon through the dialog, by keyboard; a viewer has no
 *    such buttons.
 *  - Queues (/ui/queues): bob's job borrows 2 GPUs beyond nlp-research's
 *    quota, lent by vision: the pool, the bars, the sentence and the
 *    table say so; pending links; the resource buttons in the URL.
 * Each page at 1280x800 light, dark and 390 px wide.
 */
'use strict';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Submit a job with the CLI and wait until the API says it runs. */
async function runningJob(t, env, token, args) {
    const r = await env.sluice({token}, 'run', ...args);
    const id = Number(r.stdout.trim());
    if (r.code !== 0 || !id) {
        t.fail('sluice run ' + args.join(' '), r.stderr);
        return null;
    }
    for (let i = 0; i < 300; i++) {
        const j = await env.api(token, 'GET', '/v1/jobs/' + id);
        if (j.json && j.json.state === 'Running')
            return id;
        await sleep(100);
    }
    t.fail('job ' + id + ' runs', 'it did not start within 30 s');
    return id;
}

/* The value of the overview's card labelled `label`. */
async function card(page, label) {
    return page.$$eval('.now-box .card', (cards, l) => {
        const c = cards.find((x) => x.querySelector('.label').textContent.trim() === l);
        return c ? c.querySelector('.value').textContent.trim() : null;
    }, label);
}

/* The page at `path` as the admin sees it in dark and 390 px wide, once
 * `ready` (a function run in the page) holds: screenshots NAME-dark and
 * NAME-narrow, and no sideways scroll when narrow. */
async function darkAndNarrow(t, env, path, ready, name) {
    const dark = await env.newPage(env.tokens.admin, {path, colorScheme: 'dark'});
    await dark.waitForFunction(ready);
    await t.screenshot(dark, name + '-dark');
    const narrow = await env.newPage(env.tokens.admin, {path, viewport: {width: 390, height: 844}});
    await narrow.waitForFunction(ready);
    t.ok(await narrow.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
        name + ': no sideways scroll at 390 px');
    await t.screenshot(narrow, name + '-narrow');
}

async function pressed(page) {
    return page.$$eval('button[data-range]', (bs) => bs.filter((b) => b.getAttribute('aria-pressed') === 'true')
        .map((b) => b.getAttribute('data-range')));
}

async function overview(t, env) {
    const {tokens} = env;
    const hist = await env.api(tokens.admin, 'GET', '/v1/history?range=day');
    const hasHistory = hist.status === 200;
    if (!hasHistory)
        t.diag('GET /v1/history answered ' + hist.status + ': the page must say it is not available');
    const nodes = (await env.api(tokens.admin, 'GET', '/v1/nodes')).json.nodes;
    const gpus = nodes.reduce((a, n) => a + n.gpus.length, 0);
    const id = await runningJob(t, env, tokens.alice, ['--name', 'ui-10-train', '--gpus', '1', '--cpus', '100m', '--', 'sleep', '600']);
    try {
        const page = await env.newPage(tokens.admin);
        t.is((await page.textContent('main h1')).trim(), 'Overview', 'the overview');
        await page.waitForSelector('.now-box .cards');
        t.is(await card(page, 'GPUs'), String(gpus), 'it counts every GPU of GET /v1/nodes');
        const inUse = Number(await card(page, 'Allocated, in use'));
        const idle = Number(await card(page, 'Idle but allocated'));
        const free = Number(await card(page, 'Free'));
        t.ok(inUse >= 1, 'alice\'s job makes at least one GPU allocated', 'in use: ' + inUse);
        t.is(inUse + idle + free, gpus, 'in use, idle and free add up to the GPUs');
        t.like(await page.textContent('.now-box .legend'), /Allocated, in use.*Idle but allocated.*Free/,
            'the stacked bar\'s legend names its parts with their figures');
        const models = await page.$$eval('.now-box .panel:first-child tbody tr td:first-child', (tds) => tds.map((x) => x.textContent));
        t.is(models.sort(), [...new Set(nodes.flatMap((n) => n.gpus.map((g) => g.model)))].sort(), 'a row per GPU model');
        t.is(await page.getAttribute('.now-box .panel:nth-child(2) tbody tr a', 'href'),
            '/ui/nodes?q=' + encodeURIComponent(nodes[0].name), 'a node links to its row on the Nodes page');
        t.is(await page.getAttribute('.card a[href^="/ui/jobs?state=Running"]', 'href'), '/ui/jobs?state=Running',
            'the running jobs link to the jobs page');

        /* over time */
        if (hasHistory) {
            await page.waitForFunction(() => document.querySelectorAll('.chart-panel .uplot').length === 5);
            const titles = await page.$$eval('.chart-panel h3', (hs) => hs.map((x) => x.textContent));
            t.is(titles, ['GPU allocation', 'GPU utilisation (measured)', 'Pending jobs and starts',
                'Wait before start (percentiles)', 'Preemptions'], 'five charts over the day');
            t.is(await page.locator('.chart-panel figcaption').count(), 5, 'each with its figures in words');
            t.like(await page.textContent('section[aria-labelledby="ov-hist"] > p'), /^Last day: .* all teams/, 'the range in words');
        } else {
            await page.waitForSelector('.history-box .msg');
            t.like(await page.textContent('.history-box'), /History not available from this sluiced/, 'says history is not available');
        }
        t.is(await pressed(page), ['day'], 'the day is the default range');
        await t.screenshot(page, '10-overview');

        await page.getByRole('button', {name: 'Last week'}).click();
        await page.waitForFunction(() => location.search === '?range=week');
        t.is(await pressed(page), ['week'], 'Last week: pressed, in the URL');
        if (hasHistory)
            await page.waitForFunction(() => /^Last week/.test(document.querySelector('section[aria-labelledby="ov-hist"] > p').textContent));
        await page.getByRole('button', {name: 'Last hour'}).click();
        await page.waitForFunction(() => location.search === '?range=hour');
        await page.goBack();
        await page.waitForFunction(() => location.search === '?range=week' && !!document.querySelector('button[data-range="week"][aria-pressed="true"]'));
        t.pass('back: the week again');
        await page.goBack();
        await page.waitForFunction(() => location.search === '' && !!document.querySelector('button[data-range="day"][aria-pressed="true"]'));
        t.pass('back: the day again');
        await page.goForward();
        await page.waitForFunction(() => location.search === '?range=week' && !!document.querySelector('button[data-range="week"][aria-pressed="true"]'));
        t.pass('forward: the week');
        if (hasHistory)
            await page.waitForFunction(() => document.querySelectorAll('.chart-panel .uplot').length === 5);
        await t.screenshot(page, '10-overview-week');

        /* a member: the history of its team */
        const mine = await env.newPage(tokens.alice);
        await mine.waitForSelector('.now-box .cards');
        if (hasHistory) {
            await mine.waitForFunction(() => /team/.test(document.querySelector('section[aria-labelledby="ov-hist"] > p').textContent));
            t.like(await mine.textContent('section[aria-labelledby="ov-hist"] > p'), /team vision only/, 'a member sees its team\'s history');
        }

        await darkAndNarrow(t, env, '', hasHistory ?
            () => !!document.querySelector('.now-box .cards') && document.querySelectorAll('.chart-panel .uplot').length === 5 :
            () => !!document.querySelector('.now-box .cards') && !!document.querySelector('.history-box .msg'), '10-overview');
    } finally {
        if (id)
            await env.sluice('cancel', id);
    }
}

/* The tiles of the page's first node, as [class, text]. */
async function tiles(page) {
    return page.$$eval('article.node:first-of-type .tile', (ts) => ts.map((x) => [x.className, x.textContent,
        x.querySelector('.t-state').textContent]));
}

async function nodesPage(t, env) {
    const {tokens} = env;
    const nodes = (await env.api(tokens.admin, 'GET', '/v1/nodes')).json.nodes;
    const node = nodes[0].name;
    const id = await runningJob(t, env, tokens.alice, ['--name', 'ui-10-tile', '--gpus', '1', '--cpus', '100m', '--', 'sleep', '600']);
    try {
        const page = await env.newPage(tokens.admin, {path: 'nodes'});
        t.is((await page.textContent('main h1')).trim(), 'Nodes', 'the nodes page');
        await page.waitForFunction((n) => document.querySelectorAll('article.node').length === n &&
            /^Showing/.test(document.querySelector('.node-filters + p').textContent), nodes.length);
        t.pass('a row per node');
        const ts = await tiles(page);
        t.is(ts.length, nodes[0].gpus.length, 'a tile per GPU');
        t.ok(ts.every((x) => /not measured/.test(x[1])), 'fake GPUs say they are not measured');
        t.ok(ts.every((x) => /\b(free|allocated|idle)\b/.test(x[2])), 'each tile says free, allocated or idle in words');
        const link = page.locator('.tile a', {hasText: 'ui-10-tile'});
        t.is(await link.getAttribute('href'), '/ui/jobs/' + id, 'the holder links to its job');
        t.like(await page.locator('.tile', {has: page.locator('a', {hasText: 'ui-10-tile'})}).textContent(),
            /allocated.*ui-10-tile · vision/, '... with its team');
        await t.screenshot(page, '10-nodes');

        /* filters */
        await page.getByLabel('GPU state').selectOption('allocated');
        await page.waitForFunction(() => location.search === '?state=allocated');
        const dim = await page.locator('article.node:first-of-type .tile.dim').count();
        const notAllocated = (await tiles(page)).filter((x) => !/tile-allocated/.test(x[0])).length;
        t.is(dim, notAllocated, 'state=allocated: the other tiles are dimmed');
        await page.getByLabel('GPU state').selectOption('');
        await page.getByLabel('Node name').fill('no-such-node');
        await page.waitForFunction(() => /^Showing 0 of/.test(document.querySelector('.node-filters + p').textContent));
        t.is(new URL(page.url()).search, '?q=no-such-node', 'the name filter is in the URL and hides every node');
        await page.getByLabel('Node name').fill('');
        await page.waitForFunction(() => location.search === '');

        /* cordon and uncordon, by keyboard */
        const row = page.locator('article.node', {has: page.locator('h2', {hasText: node})});
        await row.getByRole('button', {name: 'Cordon'}).focus();
        await page.keyboard.press('Enter');
        const dialog = page.locator('dialog.node-dialog');
        await dialog.waitFor();
        t.is(await dialog.locator('h2').textContent(), 'Cordon ' + node, 'a dialog asks for the reason');
        t.ok(await page.getByLabel('Reason (optional)').evaluate((el) => el === document.activeElement), '... its field has the focus');
        try {
            await page.keyboard.type('ui-10 maintenance');
            await page.keyboard.press('Enter');
            await dialog.waitFor({state: 'hidden'});
            await row.locator('.node-badges', {hasText: 'cordoned'}).waitFor();
            t.like(await row.textContent(), /cordoned: “ui-10 maintenance” by admin/, 'the row shows cordoned, the reason and who');
            const a = (await env.api(tokens.admin, 'GET', '/v1/nodes')).json.nodes.find((n) => n.name === node).admin;
            t.is([a.state, a.reason], ['cordoned', 'ui-10 maintenance'], 'sluiced has it');
            await page.waitForFunction(() => document.activeElement && document.activeElement.textContent === 'Uncordon');
            t.pass('the focus is on Uncordon');
            await t.screenshot(page, '10-nodes-cordoned');
            await page.keyboard.press('Enter');
            await dialog.waitFor();
            await dialog.getByRole('button', {name: 'Uncordon'}).click();
            await dialog.waitFor({state: 'hidden'});
            await page.waitForFunction((n) => {
                const r = document.querySelector('article[data-node="' + n + '"] .node-badges');
                return r && !/cordoned/.test(r.textContent);
            }, node);
            t.pass('uncordoned');
        } finally {
            await env.api(tokens.admin, 'POST', '/v1/nodes/' + encodeURIComponent(node) + '/uncordon', {});
        }

        const viewer = await env.newPage(tokens.victor, {path: 'nodes'});
        await viewer.waitForSelector('article.node .tile');
        t.is(await viewer.locator('.node-actions button').count(), 0, 'a viewer has no cordon or drain buttons');

        await darkAndNarrow(t, env, 'nodes', () => !!document.querySelector('article.node .tile'), '10-nodes');
    } finally {
        if (id)
            await env.sluice('cancel', id);
    }
}

async function queuesPage(t, env) {
    const {tokens} = env;
    /* nlp-research: nominal 3, may borrow 2; vision lends what it leaves
     * unused, nlp-inference nothing (examples/demo-teams.yaml) */
    const id = await runningJob(t, env, tokens.bob, ['--name', 'ui-10-borrow', '--queue', 'nlp-research', '--gpus', '5',
        '--cpus', '100m', '--', 'sleep', '600']);
    try {
        const page = await env.newPage(tokens.admin, {path: 'queues'});
        t.is((await page.textContent('main h1')).trim(), 'Queues and cohorts', 'the queues page');
        await page.waitForSelector('section.cohort');
        t.is(await page.$$eval('section.cohort h2', (hs) => hs.map((x) => x.textContent)),
            ['Cohort gpu-pool', 'Queues without a cohort'], 'the demo\'s cohort, then the queues without one');
        const pool = page.locator('section.cohort', {has: page.locator('h2', {hasText: 'Cohort gpu-pool'})});
        t.like(await pool.locator('.pool-sum').textContent(), /Pool of GPUs: 8 nominal .* 2 borrowed, 2 lent\./, 'the pool in words');
        t.is(await pool.locator('ul.flows li').allTextContents(), ['nlp-research borrows 2 GPUs, lent by vision.'],
            'who borrows from whom');
        t.like(await pool.locator('.qbar-row', {hasText: 'nlp-research'}).textContent(), /uses 5 of 3, borrows 2 · may borrow 2/,
            'the borrower\'s bar has its figures beside it');
        t.like(await pool.locator('.qbar-row', {hasText: 'vision'}).textContent(), /lends 2/, '... and the lender\'s');
        const cells = await pool.locator('tbody tr', {hasText: 'nlp-research'}).locator('td').allTextContents();
        t.is(cells.slice(0, 8), ['nlp-research', 'nlp', '3', '5', '2', '0', '2', 'none'],
            'the table: nominal, used, borrowed, lent, the limits');
        t.is(await pool.locator('a[href="/ui/jobs?queue=vision&state=Pending"]').count(), 1, 'pending jobs link to the jobs page');
        await t.screenshot(page, '10-queues');

        await page.getByRole('button', {name: 'CPUs'}).click();
        await page.waitForFunction(() => location.search === '?res=cpus');
        t.like(await pool.locator('.pool-sum').textContent(), /Pool of CPUs/, 'the CPUs of the pool');
        await page.goBack();
        await page.waitForFunction(() => location.search === '' && !!document.querySelector('button[data-res="gpus"][aria-pressed="true"]'));
        t.pass('back: GPUs again');

        await darkAndNarrow(t, env, 'queues', () => !!document.querySelector('section.cohort'), '10-queues');
    } finally {
        if (id)
            await env.sluice('cancel', id);
    }
}

module.exports = async function (t, env) {
    await overview(t, env);
    await nodesPage(t, env);
    await queuesPage(t, env);
};
