/*
 * 41-audit.js - the Audit page (/ui/audit): an auditor sees the chain
 * verified and verifies it again, reads the signed checkpoint and the
 * key, downloads the export (pages followed and joined: a small page size
 * forces several), the checkpoint and the key, and `sluice audit verify -f`
 * accepts them; the log filtered (a viewer's refused submissions among it)
 * and paged; a member gets the API's 403
 * and no Audit link; phone width, dark.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

async function download(page, selector, dir, count) {
    const got = [];
    const done = new Promise((resolve) => {
        page.on('download', async (d) => {
            const file = path.join(dir, d.suggestedFilename());
            await d.saveAs(file);
            got.push({name: d.suggestedFilename(), file});
            if (got.length === count)
                resolve();
        });
    });
    await page.click(selector);
    await done;
    return got;
}

module.exports = async function (t, env) {
    const {tokens} = env;
    const dir = fs.mkdtempSync(path.join(env.tmp, 'audit-'));

    /* Refusals are recorded too: a viewer's submissions, enough of them for
     * more than one page of the log. */
    for (let i = 0; i < 30; i++) {
        const r = await env.api(tokens.victor, 'POST', '/v1/jobs', {metadata: {name: 'ui-41-refused'},
            spec: {command: ['true']}});
        if (r.status !== 403)
            throw new Error('a viewer submitted a job: ' + r.status);
    }

    /* --- an auditor ---------------------------------------------------------- */
    const page = await env.newPage(tokens.audrey, {path: 'audit?export_limit=7'});
    t.is((await page.textContent('main h1')).trim(), 'Audit', 'the page');
    await page.waitForSelector('.audit-verdict .badge');
    t.is((await page.textContent('.audit-verdict .badge')).trim(), 'chain verified', 'the chain verifies');
    const shown = await page.$('.audit-verify');
    await page.getByRole('button', {name: 'Verify now'}).click();
    await page.waitForFunction((old) => !old.isConnected && document.querySelector('.audit-verify'), shown);
    t.is((await page.textContent('.audit-verdict .badge')).trim(), 'chain verified', 'verified again on demand');
    const ver = await env.api(tokens.audrey, 'GET', '/v1/audit/verify');
    t.like(await page.textContent('.audit-verify'), new RegExp('Records\\s*' + ver.json.records.toLocaleString('en-US')),
        'the records the API counts');

    await page.waitForFunction(() => /sluice\.audit\//.test(document.querySelector('.audit-ckpt').textContent));
    t.like(await page.textContent('.audit-ckpt'), /^sluice\.audit\/\S+\n\d+\n\S+=\ntime \S+\n\n\u2014 sluice-audit \S+\n$/,
        'the signed checkpoint as sluiced signs it');
    const key = await env.sluice('audit', 'pubkey');
    t.is((await page.textContent('.audit-key')).trim(), key.stdout.trim(), 'the verifier key is the one sluice audit pubkey prints');
    const cmd = (await page.textContent('pre.audit-cmd')).trim();
    t.is(cmd, 'sluice audit verify -f sluice-audit.ndjson --checkpoint sluice-audit.checkpoint --pubkey sluice-audit.pub',
        'the offline verify command');

    /* the three downloads, then the CLI on them as the page says */
    const files = await download(page, '#audit-download-all', dir, 3);
    t.is(files.map((f) => f.name).sort(), ['sluice-audit.checkpoint', 'sluice-audit.ndjson', 'sluice-audit.pub'], 'three files');
    await page.waitForFunction(() => /Saved sluice-audit\.ndjson/.test(document.body.innerText));
    t.like(await page.textContent('main'), /Saved sluice-audit\.ndjson: [\d,]+ records, \d+ pages/, 'the export came in pages');
    const exp = fs.readFileSync(path.join(dir, 'sluice-audit.ndjson'));
    const cli = await env.sluice({token: tokens.audrey}, 'audit', 'export');
    t.ok(cli.stdout.startsWith(exp.toString()) && exp.length > 0,
        'the export is sluice audit export (up to what was logged since)');
    const lines = exp.toString().split('\n');
    t.is(lines.pop(), '', 'it ends with a newline');
    t.ok(lines.every((l, i) => l.startsWith('{"seq":' + (i + 1) + ',')), 'every record once, in order, across the pages');
    const v = await env.sluice('audit', 'verify', '-f', path.join(dir, 'sluice-audit.ndjson'),
        '--checkpoint', path.join(dir, 'sluice-audit.checkpoint'), '--pubkey', path.join(dir, 'sluice-audit.pub'));
    t.is(v.code, 0, 'sluice audit verify -f accepts the downloads');
    t.like(v.stdout, /^ok: \d+ records, head [0-9a-f]{64}; the signed checkpoint of \d+ records matches/, 'it says so: the chain and the signed checkpoint');

    /* the log: filtered by action, newest first */
    await page.getByLabel('Action').fill('apply');
    await page.getByRole('button', {name: 'Show'}).click();
    await page.waitForFunction(() => /action=apply/.test(location.search));
    await page.waitForFunction(() => /filtered/.test((document.querySelector('.audit-log caption') || {}).textContent || ''));
    const actions = await page.$$eval('.audit-log tbody tr td:nth-child(4)', (tds) => tds.map((td) => td.textContent.trim()));
    t.ok(actions.length > 0 && actions.every((a) => a === 'apply'), 'only apply records', actions.join(', '));
    const seqs = await page.$$eval('.audit-log tbody tr td:first-child', (tds) => tds.map((td) => Number(td.textContent.replace(/,/g, ''))));
    t.ok(seqs.every((s, i) => i === 0 || s < seqs[i - 1]), 'newest first');
    /* details open with the keyboard */
    await page.locator('.audit-details summary').first().focus();
    await page.keyboard.press('Enter');
    t.ok(await page.locator('.audit-details').first().evaluate((d) => d.open), 'details open from the keyboard');
    t.like(await page.locator('.audit-details pre').first().textContent(), /"applied"/, 'the details in full');

    /* the viewer's refusals: actor and outcome */
    await page.getByLabel('Action').fill('');
    await page.getByLabel('Actor').fill('victor');
    await page.getByLabel('Outcome').selectOption('refused');
    await page.getByRole('button', {name: 'Show'}).click();
    await page.waitForFunction(() => /actor=victor/.test(location.search) && /outcome=refused/.test(location.search));
    await page.waitForFunction(() => {
        const c = document.querySelector('.audit-log tbody tr td:nth-child(3)');
        return c && c.textContent.trim() === 'victor';
    });
    const rows = await page.$$eval('.audit-log tbody tr', (trs) => trs.map((tr) =>
        [tr.children[2].textContent.trim(), tr.children[3].textContent.trim(), tr.children[5].textContent.trim()]));
    t.ok(rows.length >= 30 && rows.every((r) => r[0] === 'victor' && r[1] === 'job.submit' && r[2] === 'refused'),
        "the viewer's 30 refused submissions", JSON.stringify(rows.slice(0, 3)));
    t.like(await page.locator('.audit-details summary').first().textContent(), /code=forbidden/, "a refusal's details");

    /* paging: older and newer by seq */
    await page.getByRole('button', {name: 'Clear'}).click();
    await page.waitForFunction(() => !/action=/.test(location.search));
    await page.getByLabel('Per page').selectOption('25');
    await page.getByRole('button', {name: 'Show'}).click();
    await page.waitForFunction(() => /limit=25/.test(location.search) && document.querySelector('.audit-log tbody tr'));
    if (ver.json.records > 25) {
        const first = await page.$$eval('.audit-log tbody tr td:first-child', (tds) => tds.map((td) => td.textContent.trim()));
        await page.getByRole('button', {name: 'Older \u2192'}).click();
        await page.waitForFunction(() => /before=/.test(location.search));
        await page.waitForFunction((f) => document.querySelector('.audit-log tbody tr td').textContent.trim() !== f, first[0]);
        const older = await page.$$eval('.audit-log tbody tr td:first-child', (tds) => tds.map((td) => Number(td.textContent.replace(/,/g, ''))));
        t.is(older[0], Number(first[first.length - 1].replace(/,/g, '')) - 1, 'the older page starts right below');
        await page.getByRole('button', {name: '\u2190 Newer'}).click();
        await page.waitForFunction(() => /after=/.test(location.search));
        await page.waitForFunction((f) => document.querySelector('.audit-log tbody tr td').textContent.trim() === f, first[0]);
        t.pass('newer comes back to the first page');
    } else {
        t.skip('older and newer pages', 'fewer than 26 records');
    }
    await page.goto(env.base + 'audit');
    await env.ready(page);
    await page.waitForSelector('.audit-verdict .badge');
    await page.waitForSelector('.audit-log tbody tr');
    await t.screenshot(page, '41-audit');

    /* --- a member: the API's refusal, no navigation to it --------------------- */
    const mp = await env.newPage(tokens.alice, {path: 'audit'});
    await mp.waitForSelector('main .msg-error');
    t.like(await mp.textContent('main .msg-error'), /forbidden: role member may not GET \/v1\/audit/, "the API's 403 shown plainly");
    t.ok(!(await mp.$('#audit-verify-now')), 'nothing else of the page');
    t.ok(!(await mp.$$eval('#nav a', (as) => as.some((a) => a.textContent.trim() === 'Audit'))), 'no Audit link for a member');
    await t.screenshot(mp, '41-audit-member');

    /* --- phone width, dark -------------------------------------------------------- */
    const np = await env.newPage(tokens.audrey, {path: 'audit', viewport: {width: 390, height: 844}, colorScheme: 'dark'});
    await np.waitForSelector('.audit-log tbody tr');
    t.ok(await np.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scroll at 390 px');
    await t.screenshot(np, '41-audit-narrow-dark');
};
