/*
 * 42-models.js - the Models pages: a job with an image, code and datasets
 * registers a model (two versions); the registry lists them with their
 * stages; the model's page shows its metrics and its lineage, drawn (SVG,
 * the job a link reached with the keyboard) and written out; a member's
 * stage change is refused with the API's words under the field, a
 * team-admin's goes through and shows in the history; a viewer gets no
 * stage control; phone width, dark.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const DIGEST = 'sha256:' + '4a'.repeat(32);

module.exports = async function (t, env) {
    const {tokens} = env;
    const dsDir = path.join(env.jobsDir, 'ui-42-data');
    fs.mkdirSync(dsDir, {recursive: true});
    let r = await env.api(tokens.admin, 'POST', '/v1/apply',
        'apiVersion: sluice/v1\nkind: Dataset\nmetadata: {name: ui-42-images}\n' +
        'spec: {version: v1, digest: sha256:' + '5b'.repeat(32) + ', owner: vision, path: ' + dsDir + '}\n');
    t.is(r.status, 200, 'a dataset for the job');
    r = await env.api(tokens.alice, 'POST', '/v1/jobs',
        'apiVersion: sluice/v1\nkind: Job\nmetadata: {name: ui-42-train}\nspec:\n' +
        '  command: [sleep, "1"]\n  workdir: ' + env.jobsDir + '\n  resources: {gpus: 1}\n' +
        '  image: registry.internal/ml/train@sha256:' + '6c'.repeat(32) + '\n' +
        '  code: {repo: "https://git.example/vision/ui-42", commit: 0123abc}\n' +
        '  datasets: [ui-42-images@v1]\n');
    t.is(r.status, 201, 'a training job with its image, code and dataset');
    const job = r.json.id;
    for (let i = 0; i < 300; i++) {
        const j = await env.api(tokens.alice, 'GET', '/v1/jobs/' + job);
        if (j.json.state === 'Succeeded')
            break;
        await new Promise((res) => setTimeout(res, 100));
    }
    for (const v of ['1.9', '1.10']) {
        r = await env.api(tokens.alice, 'POST', '/v1/models', {name: 'ui-42-net', version: v, digest: DIGEST,
            uri: 's3://models/ui-42-net/' + v, metrics: {top1: 0.75, loss: 1.25}, job});
        t.is(r.status, 201, 'model ui-42-net@' + v + ' registered');
    }

    /* --- the registry ----------------------------------------------------------- */
    const page = await env.newPage(tokens.alice, {path: 'models?name=ui-42-net'});
    t.is((await page.textContent('main h1')).trim(), 'Models', 'the registry');
    await page.waitForSelector('main table tbody tr a');
    const refs = await page.$$eval('main tbody tr td:first-child', (tds) => tds.map((td) => td.textContent.trim()));
    t.is(refs, ['ui-42-net@1.10', 'ui-42-net@1.9'], 'the versions, newest first');
    t.like(await page.textContent('main tbody tr:first-child'), /none/, 'the stage as a badge');
    await t.screenshot(page, '42-models');

    /* --- a model's page: facts, metrics, lineage --------------------------------- */
    await page.getByRole('link', {name: 'ui-42-net@1.9'}).click();
    await page.waitForFunction(() => /\/ui\/models\/ui-42-net@1\.9$/.test(location.pathname));
    await page.waitForSelector('.lineage-svg');
    t.like(await page.textContent('main h1'), /^ui-42-net@1\.9\s*none$/, 'its heading with its stage');
    t.like(await page.textContent('section[aria-labelledby="model-metrics-h"]'), /top1\s*0\.75/, 'its metrics');
    const list = await page.textContent('.lineage-list');
    t.like(list, new RegExp('made by job ' + job + ' ui-42-train'), 'the list names the job');
    t.like(list, /ran image registry\.internal\/ml\/train@sha256:6c6c/, 'and its image');
    t.like(list, /ran code https:\/\/git\.example\/vision\/ui-42 at commit 0123abc/, 'its code');
    t.like(list, /read dataset ui-42-images@v1 \(read-only\), digest sha256:5b5b/, 'its dataset');
    const kinds = await page.$$eval('.lineage-node', (gs) => gs.map((g) => g.getAttribute('class').replace(/.*kind-/, '')));
    t.is(kinds.sort(), ['code', 'dataset', 'image', 'job', 'model'], 'the drawing has each of them');
    t.is(await page.$$eval('.lineage-edge', (es) => es.length), 4, 'and an arrow for each link');
    /* the drawing's job is a link the keyboard reaches */
    const jobLink = page.locator('.lineage-svg a[href="/ui/jobs/' + job + '"]');
    t.is(await jobLink.count(), 1, 'the job is a link in the drawing');
    await jobLink.focus();
    t.ok(await jobLink.evaluate((a) => document.activeElement === a), 'it takes the focus');
    await page.screenshot({path: path.join(env.outDir, '42-model-focus.png')});
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => location.pathname === '/ui/jobs/' + id, job);
    t.pass('Enter on it opens the job');
    await page.goBack();
    await page.waitForSelector('.lineage-svg');
    t.like(page.url(), /\/ui\/models\/ui-42-net@1\.9$/, 'back to the model');

    /* a member may not move it: the API's refusal under the field */
    await page.getByLabel('New stage').selectOption('production');
    await page.getByRole('button', {name: 'Change stage'}).click();
    await page.waitForSelector('#f-stage-error:not(:empty)');
    t.like(await page.textContent('#f-stage-error'), /stage: role member may not move models between stages/, "the member's refusal");
    await t.screenshot(page, '42-model-member');

    /* a team-admin may */
    const tp = await env.newPage(tokens.tess, {path: 'models/ui-42-net@1.9'});
    await tp.waitForSelector('.lineage-svg');
    await tp.getByLabel('New stage').selectOption('staging');
    await tp.getByLabel('Comment').fill('passes the eval');
    await tp.getByRole('button', {name: 'Change stage'}).click();
    await tp.waitForFunction(() => /staging/.test(document.querySelector('main h1').textContent));
    const hist = await tp.textContent('section[aria-labelledby="model-history-h"] tbody tr:first-child');
    t.like(hist, /none\s*\u2192\s*staging\s*tess\s*passes the eval/, 'the change in the history');
    const api = await env.api(tokens.tess, 'GET', '/v1/models/ui-42-net@1.9');
    t.is(api.json.stage, 'staging', 'and in the registry');
    await t.screenshot(tp, '42-model');

    /* a viewer reads it all but gets no stage control */
    const vp = await env.newPage(tokens.victor, {path: 'models/ui-42-net@1.9'});
    await vp.waitForSelector('.lineage-svg');
    t.ok(!(await vp.$('#model-stage-h')), 'no stage change for a viewer');

    /* --- phone width, dark: drawn top down ---------------------------------------- */
    const np = await env.newPage(tokens.alice, {path: 'models/ui-42-net@1.10', viewport: {width: 390, height: 844},
        colorScheme: 'dark'});
    await np.waitForSelector('.lineage-svg');
    const box = await np.$eval('.lineage-svg', (s) => s.getAttribute('viewBox').split(' ').map(Number));
    t.ok(box[3] > box[2], 'the lineage is drawn top down on a phone', box.join(' '));
    t.ok(await np.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scroll at 390 px');
    await t.screenshot(np, '42-model-narrow-dark');
};
