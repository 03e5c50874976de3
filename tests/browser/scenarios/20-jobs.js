/*
 * 20-jobs.js - the job pages: a member submits a job from the form (a
 * field error from a dry run shown under its field, then the verdict) and
 * one from the YAML editor (a syntax error shown at its line), watches the
 * first go Pending -> Running -> Succeeded on its page and reads its log,
 * sees why a second job waits (the blockers) and cancels it; the jobs list
 * with its filters in the URL, back and forward, the keyboard; another
 * team's member sees none of it (the list empty of them, the job page a
 * not-found). Screenshots of the list, the job page (pending, succeeded),
 * the form, the editor, at 1280x800, 390x844 and in dark.
 */
'use strict';

/* The state badges a job page shows, in order, each once. */
async function watchStates(page) {
    await page.evaluate(() => {
        window.__states = [];
        const note = () => {
            const b = document.querySelector('.job-state .badge');
            const s = b && b.textContent;
            if (s && window.__states[window.__states.length - 1] !== s)
                window.__states.push(s);
        };
        note();
        new MutationObserver(note).observe(document.querySelector('main'), {subtree: true, childList: true, characterData: true});
    });
}

async function stateIs(page, state, timeout) {
    await page.waitForFunction((s) => {
        const b = document.querySelector('.job-state .badge');
        return b && b.textContent === s;
    }, state, {timeout: timeout || 30000});
}

/* The list has answered for the URL it shows. */
async function listed(page) {
    await page.waitForSelector('.table-wrap[aria-busy=false]');
}

module.exports = async function (t, env) {
    const {tokens} = env;
    const alice = tokens.alice;
    const hogSpec = (name) => ({apiVersion: 'sluice/v1', kind: 'Job', metadata: {name},
        spec: {command: ['sleep', '300'], resources: {gpus: 2}}});

    /* --- submit from the form; a dry run's field error, then its verdict --- */
    /* alice may hold 2 GPUs in queue vision: a hog of 2 keeps her next job
     * Pending until it is cancelled */
    const hog = await env.api(alice, 'POST', '/v1/jobs', hogSpec('ui-20-hog'));
    t.is(hog.status, 201, 'a job holding alice\'s 2 GPUs');

    const page = await env.newPage(alice, {path: 'submit'});
    t.is((await page.textContent('main h1')).trim(), 'Submit a job', 'the submit page');
    await page.getByLabel('Name').fill('ui-20-form');
    await page.getByLabel('GPUs per task').fill('65');
    await page.getByLabel('Command').fill("sh -c 'echo hello from the form; sleep 8; echo done'");
    t.like(await page.textContent('.submit-argv'), /argv: \["sh","-c","echo hello from the form; sleep 8; echo done"\]/,
        'the command is shown as the argv it becomes');
    await page.getByRole('button', {name: 'Dry run'}).click();
    await page.waitForSelector('#f-gpus[aria-invalid=true]');
    t.like(await page.textContent('#f-gpus-error'), /^spec\.resources\.gpus: must be an integer from 0 to 64, got 65$/,
        'the API\'s field error under the GPU field, as the API words it');
    t.ok(await page.evaluate(() => document.activeElement.id === 'f-gpus'), 'the field at fault has the focus');
    await page.getByLabel('GPUs per task').fill('1');
    await page.getByRole('button', {name: 'Dry run'}).click();
    await page.waitForSelector('.submit-result .msg-ok');
    const verdict = (await page.textContent('.submit-result')).replace(/\s+/g, ' ');
    t.like(verdict, /would be admitted/, 'the dry run\'s verdict');
    t.like(verdict, /Team ?vision/, '... with the team');
    t.like(verdict, /Queue ?vision/, '... and the queue');
    t.ok(await page.isHidden('#f-gpus[aria-invalid]'), 'the field error is gone');
    await t.screenshot(page, '20-submit-form');
    await page.getByRole('button', {name: 'Submit', exact: true}).click();
    await page.waitForURL(/\/ui\/jobs\/\d+$/);
    const formId = page.url().split('/').pop();
    t.like(formId, /^\d+$/, 'Submit goes to the new job\'s page');
    await page.waitForSelector('.job-body:not([hidden])');
    await watchStates(page);

    /* --- why it waits, then Pending -> Running -> Succeeded, its log --- */
    await stateIs(page, 'Pending');
    await page.waitForSelector('.job-blockers li');
    t.like(await page.textContent('.job-blockers'), /Per-user limit of queue vision: alice uses 2 GPU of 2 GPU/,
        'why it waits: the blocker with its numbers');
    t.like(await page.textContent('.job-why-summary'), /user limit: alice may hold 2 GPUs in queue vision/, 'the summary');
    t.like(await page.textContent('.panel:has(#job-why)'), /Position\s*1 of 1 pending in queue vision/, 'its place in line');
    await t.screenshot(page, '20-job-pending');
    t.is((await env.api(alice, 'DELETE', '/v1/jobs/' + hog.json.id)).status, 202, 'the hog cancelled');
    await stateIs(page, 'Succeeded', 60000);
    t.is(await page.evaluate(() => window.__states), ['Pending', 'Running', 'Succeeded'],
        'the page showed Pending, Running, Succeeded without a reload');
    await page.waitForFunction(() => /done/.test(document.querySelector('pre.log').textContent));
    t.is(await page.textContent('pre.log'), 'hello from the form\ndone\n', 'the log, read while it ran');
    await page.waitForFunction(() => /Succeeded/.test(document.querySelector('.job-timeline').textContent));
    t.like(await page.textContent('.job-timeline'), /Pending[\s\S]*Running[\s\S]*Succeeded/, 'the timeline');
    t.like(await page.textContent('.panel:has(#job-placement-h)'), /vm|\S+/, 'the placement');
    await page.waitForFunction(() => /GPU-hours/.test(document.querySelector('.panel:has(#job-usage-h)').textContent));
    t.like(await page.textContent('.panel:has(#job-usage-h)'), /CO₂/, 'the usage');
    t.ok(await page.isHidden('[data-act=cancel]'), 'no cancel button once it has ended');
    await t.screenshot(page, '20-job-succeeded');

    /* --- the YAML editor: a syntax error at its line, then a submission --- */
    await page.click('#nav a:has-text("Submit")');
    await env.ready(page);
    await page.getByLabel('Name').fill('ui-20-yaml');
    await page.getByLabel('Command').fill('echo from yaml');
    await page.getByRole('button', {name: 'YAML editor'}).click();
    const editor = page.getByLabel('Job spec (YAML or JSON)');
    const start = await editor.inputValue();
    t.like(start, /name: ui-20-yaml\n[\s\S]*command: \[echo, from, yaml\]/, 'the editor starts with the form\'s values');
    await editor.fill(start.replace('command: [echo, from, yaml]', 'command: [echo, from, yaml\n  tasks: 1'));
    await page.getByRole('button', {name: 'Dry run'}).click();
    await page.waitForSelector('#spec-yaml-error .msg');
    t.like(await page.textContent('#spec-yaml-error'), /line \d+, column \d+/, 'a YAML error with its line and column above the editor');
    t.is(await editor.getAttribute('aria-invalid'), 'true', 'the editor is marked invalid');
    await t.screenshot(page, '20-submit-yaml-error');
    await editor.fill(start.replace('command: [echo, from, yaml]', 'command: [sh, -c, "echo from yaml"]'));
    await page.getByRole('button', {name: 'Submit', exact: true}).click();
    await page.waitForURL(/\/ui\/jobs\/\d+$/);
    const yamlId = page.url().split('/').pop();
    await stateIs(page, 'Succeeded', 60000);
    await page.waitForFunction(() => /from yaml/.test(document.querySelector('pre.log').textContent));
    t.pass('the YAML job ran, its log read');

    /* --- a second job waits: why, then cancel it --------------------------- */
    const hog2 = await env.api(alice, 'POST', '/v1/jobs', hogSpec('ui-20-hog2'));
    await page.click('#nav a:has-text("Submit")');
    await env.ready(page);
    await page.getByLabel('Name').fill('ui-20-waits');
    await page.getByLabel('Command').fill('sleep 5');
    await page.getByRole('button', {name: 'Submit', exact: true}).click();
    await page.waitForURL(/\/ui\/jobs\/\d+$/);
    const waitId = page.url().split('/').pop();
    await page.waitForSelector('.job-blockers li');
    t.like(await page.textContent('.job-blockers'), /Per-user limit/, 'the second job: why it waits');
    await page.getByRole('button', {name: /^Cancel job/}).click();
    t.ok(await page.evaluate(() => document.activeElement.textContent === 'Yes, cancel job ' + location.pathname.split('/').pop()),
        'cancel asks first, the confirmation focused');
    await page.keyboard.press('Enter');
    await stateIs(page, 'Cancelled');
    t.pass('cancelled from its page');
    await env.api(alice, 'DELETE', '/v1/jobs/' + hog2.json.id);

    /* --- the list: filters in the URL, back and forward, the keyboard ------ */
    await page.click('#nav a:has-text("Jobs")');
    await env.ready(page);
    await listed(page);
    await page.getByLabel('State').selectOption('Succeeded');
    await page.waitForFunction(() => location.search === '?state=Succeeded');
    await listed(page);
    await page.getByLabel('Name contains').fill('ui-20');
    await page.waitForFunction(() => /q=ui-20/.test(location.search));
    await listed(page);
    const ids = await page.$$eval('.jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => tr.dataset.id));
    t.ok(ids.includes(formId) && ids.includes(yamlId) && !ids.includes(waitId),
        'Succeeded and "ui-20": the form and YAML jobs, not the cancelled one', 'ids: ' + ids.join(','));
    await page.goBack();
    await listed(page);
    t.is(await page.getByLabel('State').inputValue(), 'Succeeded', 'back: the state filter');
    t.is(await page.getByLabel('Name contains').inputValue(), '', '... without the text');
    await page.goForward();
    await listed(page);
    t.is(await page.getByLabel('Name contains').inputValue(), 'ui-20', 'forward: the text again');
    await page.getByRole('button', {name: 'Name'}).click();
    await page.waitForFunction(() => /sort=name/.test(location.search));
    await listed(page);
    t.is(await page.getAttribute('th[aria-sort]', 'aria-sort'), 'ascending', 'a sortable header says its order');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /sort=-name/.test(location.search));
    t.ok(await page.evaluate(() => document.activeElement.classList.contains('sort')), 'the header keeps the focus');
    await listed(page);
    await t.screenshot(page, '20-jobs');

    /* --- live: a new job shows up without a reload, the other rows kept;
     * an unchanged page is answered 304 --- */
    await page.getByRole('button', {name: 'Clear filters'}).click();
    await page.waitForFunction(() => location.search === '' || location.search === '?sort=-name');
    await listed(page);
    await page.evaluate(() => document.querySelectorAll('.jobs-table tbody tr').forEach((tr) => {
        tr.dataset.kept = '1';
    }));
    const before = await page.$$eval('.jobs-table tbody tr[data-id]', (trs) => trs.length);
    const live = await env.api(alice, 'POST', '/v1/jobs', {apiVersion: 'sluice/v1', kind: 'Job', metadata: {name: 'ui-20-live'},
        spec: {command: ['true'], resources: {gpus: 1}}});
    await page.waitForSelector('.jobs-table tbody tr[data-id="' + live.json.id + '"]', {timeout: 15000});
    t.is(await page.$$eval('.jobs-table tbody tr[data-kept]', (trs) => trs.length), before,
        'a new job appears by itself; the rows shown stay (not rebuilt)');
    const again = await page.waitForResponse((r) => /\/v1\/jobs\?/.test(r.url()) && r.status() === 304, {timeout: 15000});
    t.ok(again.request().headers()['if-none-match'], 'an unchanged page is polled with its ETag and answered 304');
    const narrow = await env.newPage(alice, {path: 'jobs?q=ui-20', viewport: {width: 390, height: 844}, colorScheme: 'dark'});
    await listed(narrow);
    await t.screenshot(narrow, '20-jobs-narrow-dark');
    const narrowJob = await env.newPage(alice, {path: 'jobs/' + formId, viewport: {width: 390, height: 844}, colorScheme: 'dark'});
    await narrowJob.waitForSelector('.job-body:not([hidden])');
    await t.screenshot(narrowJob, '20-job-narrow-dark');

    /* --- another team's member sees none of it ------------------------------ */
    const bob = await env.newPage(tokens.bob, {path: 'jobs'});
    await listed(bob);
    const bobSees = await bob.$$eval('.jobs-table tbody tr[data-id]', (trs) => trs.map((tr) => ({id: tr.dataset.id,
        team: tr.querySelector('[data-col=team]').textContent})));
    t.ok(!bobSees.some((r) => [formId, yamlId, waitId].includes(r.id) || r.team !== 'nlp'),
        'bob (nlp): none of alice\'s jobs listed, only his team\'s', JSON.stringify(bobSees));
    await bob.getByLabel('Name contains').fill('ui-20');
    await bob.waitForFunction(() => /q=ui-20/.test(location.search));
    await listed(bob);
    t.is(await bob.$$eval('.jobs-table tbody tr[data-id] [data-col=name]', (tds) => tds.filter((td) => /^ui-20-/.test(td.textContent)).length),
        0, '... and none named ui-20-');
    await bob.goto(env.base + 'jobs/' + formId);
    await bob.waitForSelector('main h1:has-text("not found")');
    t.like(await bob.textContent('main'), /not_found: job \d+ not found/, 'bob: alice\'s job page is a not-found, in the API\'s words');
    t.ok(await bob.isHidden('.job-body'), '... showing nothing of it');
    await t.screenshot(bob, '20-job-other-team');
};
