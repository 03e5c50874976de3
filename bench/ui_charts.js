#!/usr/bin/env node
/*
 * ui_charts.js - the charting libraries weighed for the dashboard
 * (docs/decisions/0014-web-ui-stack.md): uPlot, which the dashboard
 * bundles, and Chart.js, the other candidate. Prints, for each one found:
 * the bytes it adds to app.js (minified, and gzipped as a server would send
 * it), the time to evaluate the script, and the time to draw a line chart
 * of 4 series x 2,000 points in headless Chromium until its pixels are
 * there (the first draw in a fresh page, then the median of warm draws).
 *
 * uPlot comes from web/node_modules; Chart.js is not a dependency of the
 * dashboard, so it is measured only when require() finds it (NODE_PATH).
 * Settings: BENCH_UI_CHART_RUNS (15 warm draws), BENCH_UI_CHART_PAGES (5
 * fresh pages, for the first draw and the evaluation). Never fails on
 * speed.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const H = require('../tests/browser/harness.js');
const median = H.median;

const RUNS = Number(process.env.BENCH_UI_CHART_RUNS || 15);
const PAGES = Number(process.env.BENCH_UI_CHART_PAGES || 5);
const SERIES = 4;
const POINTS = 2000;

/* PKG/FILE in web/node_modules, else in a NODE_PATH directory. */
function find(pkg, file) {
    const dirs = [path.join(H.REPO, 'web', 'node_modules')]
        .concat((process.env.NODE_PATH || '').split(path.delimiter).filter(Boolean));
    for (const d of dirs) {
        const f = path.join(d, pkg, file);
        if (fs.existsSync(f))
            return {file: f, version: JSON.parse(fs.readFileSync(path.join(d, pkg, 'package.json'), 'utf8')).version};
    }
    return null;
}

const LIBS = [
    {name: 'uPlot', pkg: 'uplot', js: 'dist/uPlot.iife.min.js', css: 'dist/uPlot.min.css'},
    {name: 'Chart.js', pkg: 'chart.js', js: 'dist/chart.umd.min.js'}
];

/* In the page: one chart of the library into a new 900x300 box. Resolves
 * the ms until its pixels are there: the constructor returns (both draw
 * at once with animation off), then reading a pixel back makes the canvas
 * finish every drawing command. */
function drawIn(lib, n, m) {
    const t = new Array(m), ys = [];
    const now = Date.UTC(2026, 11, 1) / 1000;
    for (let i = 0; i < m; i++)
        t[i] = now + i * 60;
    for (let s = 0; s < n; s++) {
        const y = new Array(m);
        for (let i = 0; i < m; i++)
            y[i] = 50 + 40 * Math.sin(i / (40 + 13 * s)) + ((i * 7919 + s * 104729) % 97) / 10;
        ys.push(y);
    }
    const box = document.createElement('div');
    box.style.width = '900px';
    box.style.height = '300px';
    document.body.appendChild(box);
    const colours = ['#2563eb', '#dc2626', '#16a34a', '#9333ea'];
    const t0 = performance.now();
    let chart;
    if (lib === 'uPlot') {
        chart = new window.uPlot({
            width: 900, height: 300,
            series: [{}].concat(ys.map((_, s) => ({label: 's' + s, stroke: colours[s], width: 2}))),
            scales: {x: {time: true}}
        }, [t].concat(ys), box);
    } else {
        const canvas = document.createElement('canvas');
        canvas.width = 900;
        canvas.height = 300;
        box.appendChild(canvas);
        chart = new window.Chart(canvas, {
            type: 'line',
            data: {datasets: ys.map((y, s) => ({
                label: 's' + s, borderColor: colours[s], borderWidth: 2, pointRadius: 0,
                data: y.map((v, i) => ({x: t[i], y: v}))
            }))},
            options: {
                animation: false, responsive: false, parsing: false, normalized: true,
                spanGaps: true, scales: {x: {type: 'linear'}}
            }
        });
    }
    box.querySelector('canvas').getContext('2d').getImageData(450, 150, 1, 1);
    const ms = performance.now() - t0;
    chart.destroy();
    box.remove();
    return ms;
}

const f1 = (v) => isFinite(v) ? v.toFixed(1) : '?';

async function measure(browser, lib, src) {
    const evals = [], firsts = [], warm = [];
    for (let p = 0; p < PAGES; p++) {
        const ctx = await browser.newContext({viewport: {width: 1280, height: 800}});
        const page = await ctx.newPage();
        await page.setContent('<!doctype html><html><body></body></html>');
        evals.push(await page.evaluate((code) => {
            const t0 = performance.now();
            (0, eval)(code);
            return performance.now() - t0;
        }, src));
        const draw = '(' + drawIn.toString() + ')(' + JSON.stringify(lib) + ', ' + SERIES + ', ' + POINTS + ')';
        firsts.push(await page.evaluate(draw));
        if (p === 0) {
            for (let r = 0; r < RUNS; r++)
                warm.push(await page.evaluate(draw));
        }
        await ctx.close();
    }
    return {evalMs: median(evals), firstMs: median(firsts), warmMs: median(warm),
        warmMin: Math.min(...warm), warmMax: Math.max(...warm)};
}

async function main() {
    const pw = H.loadPlaywright();
    const chromium = H.findChromium();
    if (pw.missing || !chromium) {
        console.log('ui_charts: skipped (' + (pw.missing || 'no Chromium') + ')');
        return 0;
    }
    const browser = await H.launchBrowser(pw, chromium);
    const rows = [];
    try {
        /* The browser's own first-context costs go to neither library. */
        const warmup = await browser.newContext();
        await (await warmup.newPage()).evaluate(() => (0, eval)('1 + 1'));
        await warmup.close();
        for (const l of LIBS) {
            const js = find(l.pkg, l.js);
            if (!js) {
                rows.push({name: l.name, missing: true});
                continue;
            }
            const src = fs.readFileSync(js.file);
            const css = l.css ? find(l.pkg, l.css) : null;
            const all = css ? Buffer.concat([src, fs.readFileSync(css.file)]) : src;
            const m = await measure(browser, l.name, src.toString('utf8'));
            rows.push(Object.assign({name: l.name, version: js.version, bytes: all.length,
                gz: zlib.gzipSync(all).length, css: !!css}, m));
        }
    } finally {
        await browser.close();
    }
    console.log('== charting libraries: ' + SERIES + ' series x ' + POINTS + ' points, 900x300 canvas, Chromium ' +
        browser.version() + ' headless; first draw: median of ' + PAGES + ' fresh pages; warm: median of ' + RUNS);
    console.log('library          min bytes   gzipped   evaluate   first draw   warm draw (min-max)');
    for (const r of rows) {
        if (r.missing) {
            console.log((r.name + '                ').slice(0, 16) + ' not installed (NODE_PATH)');
            continue;
        }
        console.log((r.name + ' ' + r.version + '                ').slice(0, 16) +
            (String(r.bytes) + (r.css ? '*' : '')).padStart(10) + String(r.gz).padStart(10) +
            (f1(r.evalMs) + ' ms').padStart(11) + (f1(r.firstMs) + ' ms').padStart(13) +
            (f1(r.warmMs) + ' ms').padStart(12) + ' (' + f1(r.warmMin) + '-' + f1(r.warmMax) + ')');
    }
    if (rows.some((r) => r.css))
        console.log('(* with its stylesheet; gzip at zlib\'s default level 6)');
    return 0;
}

main().then((rc) => {
    process.exitCode = rc;
}, (e) => {
    console.error('ui_charts: ' + (e && e.stack ? e.stack : e));
    process.exitCode = 1;
});
