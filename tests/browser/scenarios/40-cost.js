/*
 * 40-cost.js - the Teams and cost page (/ui/cost): an admin sees every
 * team's usage, the budgets with their marks and actions and the cluster's
 * utilisation, and downloads the chargeback CSV, which must be the bytes
 * `sluice report ... --chargeback -o csv` prints for the same parameters
 * (the page shows that command line; the test runs it); a member sees
 * their own team's rows only, with no team selector; phone width, dark.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

/* Submit a short job as `token` and wait until it has ended. */
async function runJob(env, token, name, gpus) {
    const yaml = 'apiVersion: sluice/v1\nkind: Job\nmetadata: {name: ' + name + '}\n' +
        'spec:\n  command: [sleep, "1"]\n  workdir: ' + env.jobsDir + '\n  resources: {gpus: ' + gpus + '}\n';
    const r = await env.api(token, 'POST', '/v1/jobs', yaml);
    if (r.status !== 201)
        throw new Error('submit ' + name + ': ' + r.status + ' ' + r.text);
    const id = r.json.id;
    for (let i = 0; i < 300; i++) {
        const j = await env.api(token, 'GET', '/v1/jobs/' + id);
        if (['Succeeded', 'Failed', 'Cancelled', 'Lost', 'Timeout'].includes(j.json.state))
            return j.json;
        await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('job ' + id + ' did not end');
}

async function download(page, selector, dir) {
    const [d] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
    const file = path.join(dir, d.suggestedFilename());
    await d.saveAs(file);
    return {file, name: d.suggestedFilename(), bytes: fs.readFileSync(file)};
}

/* The first column of the report table's body rows, the total left out. */
async function keys(page) {
    return page.$$eval('section[aria-labelledby="cost-table-h"] tbody tr:not(.cost-total) td:first-child',
        (tds) => tds.map((td) => td.textContent.trim()));
}

/* sluice's words split the way a shell would, for the command the page shows
 * (its words are bare or in single quotes). */
function words(cmd) {
    const out = [];
    const re = /'((?:[^']|'\\'')*)'|(\S+)/g;
    let m;
    while ((m = re.exec(cmd)))
        out.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]);
    return out;
}

module.exports = async function (t, env) {
    const {tokens} = env;
    const dir = fs.mkdtempSync(path.join(env.tmp, 'cost-'));
    await runJob(env, tokens.alice, 'ui-40-vision', 1);
    await runJob(env, tokens.bob, 'ui-40-nlp', 2);

    /* A window that ends in the past: the report and the CLI's are the same
     * bytes whatever runs meanwhile. */
    const to = new Date(Date.now() - 1000).toISOString();
    const from = to.slice(0, 10);
    const q = 'by=team&period=day&from=' + from + '&to=' + encodeURIComponent(to) + '&share_idle=true';

    /* --- admin: every team, the chargeback CSV ------------------------------ */
    const page = await env.newPage(tokens.admin, {path: 'cost?' + q});
    t.is((await page.textContent('main h1')).trim(), 'Teams and cost', 'the page');
    await page.waitForSelector('section[aria-labelledby="cost-table-h"] table');
    const adminKeys = await keys(page);
    t.ok(adminKeys.includes('vision') && adminKeys.includes('nlp'), 'an admin sees both teams', adminKeys.join(', '));
    t.ok(await page.$('#f-team'), 'an admin may pick a team');
    t.like(await page.textContent('section[aria-labelledby="cost-table-h"] thead'), /Chargeback/, 'chargeback columns');
    const cmd = (await page.textContent('.cost-cmdline')).trim();
    t.is(cmd, 'sluice report --by team --from ' + from + ' --to ' + to + ' --period day --chargeback -o csv',
        'the command line of the same parameters');
    const csv = await download(page, '#cost-csv', dir);
    t.like(csv.name, /^sluice-report-team-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv$/, 'the file is named as sluiced names it');
    const cli = await env.sluice(...words(cmd).slice(1));
    t.is(cli.code, 0, 'the CLI prints the report');
    t.ok(Buffer.from(cli.stdout).equals(csv.bytes), 'the downloaded CSV is byte for byte sluice report -o csv',
        'download: ' + JSON.stringify(csv.bytes.toString().slice(0, 300)), 'cli: ' + JSON.stringify(cli.stdout.slice(0, 300)));
    t.like(csv.bytes.toString(), /^key,period,jobs,gpu_hours,/, 'a CSV with its header');

    /* the budgets of the demo, with their marks and actions */
    await page.waitForSelector('.budget .uplot');
    const budgets = await page.$$eval('.budget h3', (hs) => hs.map((x) => x.textContent));
    t.ok(budgets.some((b) => /vision-monthly/.test(b)) && budgets.some((b) => /nlp-monthly/.test(b)), 'both budgets', budgets.join(', '));
    const vb = page.locator('.budget', {hasText: 'vision-monthly'});
    t.like(await vb.textContent(), /At 80\u00a0%:.*At 100\u00a0%: new submissions of team vision are refused/s, 'the block action in words');
    t.like(await page.locator('.budget', {hasText: 'nlp-monthly'}).textContent(), /best-effort/, 'the demote action in words');
    t.ok(await vb.locator('.meter-mark').count() === 2, 'the 80 % and 100 % marks');
    t.ok(await vb.locator('.uplot').count() === 1, 'a burn-up chart');
    await page.waitForSelector('section[aria-labelledby="cost-util-h"] .cards');
    t.like(await page.textContent('section[aria-labelledby="cost-util-h"]'), /Utilisation/, 'the utilisation panel');

    /* another figure charted, another grouping: the URL follows, back works */
    await page.getByRole('group', {name: 'Figure to chart'}).getByRole('button', {name: 'Cost'}).click();
    await page.waitForFunction(() => /metric=cost/.test(location.search));
    await page.getByLabel('By', {exact: true}).selectOption('gpu-model');
    await page.waitForFunction(() => /by=gpu-model/.test(location.search));
    await page.waitForFunction(() => /GPU model/.test(document.querySelector('#cost-table-h').textContent));
    t.ok((await keys(page)).every((k) => /H100|A100/.test(k)), 'rows by GPU model');
    await page.goBack();
    await page.waitForFunction(() => !/by=gpu-model/.test(location.search) && document.querySelector('#cost-table-h'));
    await page.waitForFunction(() => /By team/.test(document.querySelector('#cost-table-h').textContent));
    t.pass('back shows the report by team again');
    await page.goto(env.base + 'cost?' + q);
    await env.ready(page);
    await page.waitForSelector('.budget .uplot');
    await t.screenshot(page, '40-cost');

    /* --- a member: their team only, no team selector ------------------------- */
    const mp = await env.newPage(tokens.alice, {path: 'cost?' + q});
    await mp.waitForSelector('section[aria-labelledby="cost-table-h"] table');
    const mk = await keys(mp);
    t.ok(mk.length > 0 && mk.every((k) => k === 'vision'), "a member sees their team's rows only", mk.join(', '));
    t.ok(!(await mp.$('#f-team')), 'no team selector for a member');
    await mp.waitForSelector('.budget');
    const mb = await mp.$$eval('.budget h3', (hs) => hs.map((x) => x.textContent));
    t.ok(mb.every((b) => !/nlp/.test(b)), "no other team's budget", mb.join(', '));
    const mcsv = await download(mp, '#cost-csv', dir);
    const mcli = await env.sluice({token: tokens.alice}, ...words((await mp.textContent('.cost-cmdline')).trim()).slice(1));
    t.ok(Buffer.from(mcli.stdout).equals(mcsv.bytes), "the member's CSV is the member's sluice report");
    t.unlike(mcsv.bytes.toString(), /^nlp,/m, 'and holds no other team');
    await mp.waitForSelector('.budget .uplot');
    await t.screenshot(mp, '40-cost-member');

    /* --- phone width, dark ------------------------------------------------------- */
    const np = await env.newPage(tokens.admin, {path: 'cost?' + q, viewport: {width: 390, height: 844}, colorScheme: 'dark'});
    await np.waitForSelector('.budget .uplot');
    t.ok(await np.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scroll at 390 px');
    await t.screenshot(np, '40-cost-narrow-dark');
};
