/*
 * 20-dom.js - building the page: elements from data (never from HTML
 * strings, so no text from the API is ever parsed as markup), and the few
 * components every page shares: tables with sortable headers, a pager,
 * key/value lists, meters, badges, messages and time-series charts.
 */
'use strict';

var Dom = (function () {
    /* h('a', {href: '/ui/jobs', class: 'x', onclick: fn}, 'text', child...)
     * - attributes by name; `on*` functions become listeners; `class`,
     * `for`, `dataset` and boolean values are handled; children are
     * strings (text nodes), nodes, arrays of them, null or false (skipped). */
    function h(tag, attrs) {
        var el = document.createElement(tag);
        if (attrs) {
            Object.keys(attrs).forEach(function (k) {
                var v = attrs[k];
                if (v === null || v === undefined || v === false)
                    return;
                if (k.slice(0, 2) === 'on' && typeof v === 'function')
                    el.addEventListener(k.slice(2), v);
                else if (k === 'dataset')
                    Object.assign(el.dataset, v);
                else if (k === 'value' && 'value' in el)
                    el.value = v;
                else if (v === true)
                    el.setAttribute(k, '');
                else
                    el.setAttribute(k, String(v));
            });
        }
        for (var i = 2; i < arguments.length; i++)
            append(el, arguments[i]);
        return el;
    }

    function append(el, c) {
        if (c === null || c === undefined || c === false)
            return;
        if (Array.isArray(c)) {
            c.forEach(function (x) {
                append(el, x);
            });
        } else if (c instanceof Node) {
            el.appendChild(c);
        } else {
            el.appendChild(document.createTextNode(String(c)));
        }
    }

    function clear(el) {
        while (el.firstChild)
            el.removeChild(el.firstChild);
        return el;
    }

    /* A link inside the dashboard: followed by the router, no reload. */
    function link(href, text, attrs) {
        var a = Object.assign({href: href, 'data-link': true}, attrs || {});
        return h('a', a, text);
    }

    /* A state or flag as a badge: text always, colour only in addition. */
    function badge(text, kind) {
        return h('span', {class: 'badge badge-' + (kind || String(text).toLowerCase())}, text);
    }

    /* An error or notice box. `err` an ApiError, an Error or a string. */
    function message(err, kind) {
        var text = typeof err === 'string' ? err : err.message;
        var box = h('div', {class: 'msg msg-' + (kind || 'error'), role: kind === 'info' ? 'status' : 'alert'});
        if (err && err.code && kind !== 'info')
            box.appendChild(h('strong', null, err.code + (err.field ? ' (' + err.field + ')' : '') + ': '));
        box.appendChild(document.createTextNode(text));
        return box;
    }

    /* A definition list of [label, value] pairs; values may be nodes. */
    function kv(pairs) {
        var dl = h('dl', {class: 'kv'});
        pairs.forEach(function (p) {
            if (!p)
                return;
            dl.appendChild(h('dt', null, p[0]));
            dl.appendChild(h('dd', null, p[1] === null || p[1] === undefined || p[1] === '' ? '\u2014' : p[1]));
        });
        return dl;
    }

    /* A horizontal meter: value of max, with the text beside it, so the
     * figure never depends on the bar's colour. marks: [{at, label}]. */
    function meter(value, max, text, opts) {
        opts = opts || {};
        var frac = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
        var bar = h('div', {class: 'meter' + (opts.kind ? ' meter-' + opts.kind : ''), role: 'meter',
                            'aria-valuemin': 0, 'aria-valuemax': max, 'aria-valuenow': value,
                            'aria-label': opts.label || text});
        var fill = h('div', {class: 'meter-fill'});
        fill.style.width = (frac * 100).toFixed(2) + '%';
        bar.appendChild(fill);
        (opts.marks || []).forEach(function (m) {
            var mk = h('div', {class: 'meter-mark', title: m.label});
            mk.style.left = (Math.max(0, Math.min(1, m.at)) * 100).toFixed(2) + '%';
            bar.appendChild(mk);
        });
        return h('div', {class: 'meter-row'}, bar, h('span', {class: 'meter-text'}, text));
    }

    /* A table. cols: [{key, label, render(row) -> node|string, sort: key
     * for the server or true, num: true (right-aligned)}]. opts: {sort:
     * current sort ("name" or "-name"), onSort(newSort), empty: text,
     * caption, rowAttrs(row)}. Headers of sortable columns are buttons,
     * aria-sort tells the order. */
    function table(cols, rows, opts) {
        opts = opts || {};
        var thead = h('thead', null, h('tr', null, cols.map(function (c) {
            var th = h('th', {scope: 'col', class: c.num ? 'num' : null});
            var key = c.sort === true ? c.key : c.sort;
            if (key && opts.onSort) {
                var cur = opts.sort || '';
                var dir = cur === key ? 'ascending' : cur === '-' + key ? 'descending' : null;
                if (dir)
                    th.setAttribute('aria-sort', dir);
                th.appendChild(h('button', {type: 'button', class: 'sort',
                    onclick: function () {
                        opts.onSort(cur === key ? '-' + key : key);
                    }}, c.label, h('span', {class: 'sort-ind', 'aria-hidden': 'true'},
                    dir === 'ascending' ? ' \u25b2' : dir === 'descending' ? ' \u25bc' : '')));
            } else {
                th.appendChild(document.createTextNode(c.label));
            }
            return th;
        })));
        var tbody = h('tbody');
        if (!rows.length) {
            tbody.appendChild(h('tr', null, h('td', {colspan: cols.length, class: 'empty'},
                opts.empty || 'Nothing to show.')));
        }
        rows.forEach(function (r) {
            var tr = h('tr', opts.rowAttrs ? opts.rowAttrs(r) : null);
            cols.forEach(function (c) {
                var v = c.render ? c.render(r) : r[c.key];
                tr.appendChild(h('td', {class: c.num ? 'num' : null},
                    v === null || v === undefined || v === '' ? '\u2014' : v));
            });
            tbody.appendChild(tr);
        });
        var t = h('table', {class: 'grid'}, opts.caption ? h('caption', null, opts.caption) : null, thead, tbody);
        return h('div', {class: 'table-wrap'}, t);
    }

    /* "1–50 of 1,234" with previous/next buttons. onPage(newOffset). */
    function pager(offset, limit, total, onPage) {
        var last = total === null || total === undefined ? null : total;
        var end = last === null ? offset + limit : Math.min(offset + limit, last);
        var text = last === 0 ? 'No results' :
            Fmt.int(offset + 1) + '\u2013' + Fmt.int(end) + (last === null ? '' : ' of ' + Fmt.int(last));
        return h('div', {class: 'pager'},
            h('button', {type: 'button', disabled: offset <= 0, onclick: function () {
                onPage(Math.max(0, offset - limit));
            }}, '\u2190 Previous'),
            h('span', {'aria-live': 'polite'}, text),
            h('button', {type: 'button', disabled: last !== null && end >= last, onclick: function () {
                onPage(offset + limit);
            }}, 'Next \u2192'));
    }

    /* The page's colours as the stylesheet sets them (light or dark). */
    function cssVar(name) {
        return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    }

    var PALETTE = ['--c1', '--c2', '--c3', '--c4', '--c5', '--c6'];

    /* A time-series chart (uPlot) in `el`. data: {t: [ms...], series:
     * [{label, values: [...], unit, fmt(v), colour, dash, points}]}:
     * `colour` a CSS variable ("--warn") for a series whose colour means
     * something (else the palette's next), `dash` an array ([6, 3]) or
     * null for solid (else every second series dashed), `points` false
     * for a line without its points (a limit). Resizes with its box; the
     * returned object has destroy(). Without uPlot (never expected in a
     * built UI) it says so. */
    function chart(el, data, opts) {
        opts = opts || {};
        clear(el);
        if (typeof uPlot === 'undefined') {
            el.appendChild(message('charts unavailable: uPlot is not in this build', 'info'));
            return {destroy: function () {}};
        }
        var fg = cssVar('--fg'), grid = cssVar('--grid');
        var axis = {stroke: fg, grid: {stroke: grid, width: 1}, ticks: {stroke: grid, width: 1}};
        var series = [{}].concat(data.series.map(function (s, i) {
            var colour = cssVar(s.colour || PALETTE[i % PALETTE.length]);
            return {
                label: s.label, stroke: colour, width: 2,
                fill: opts.fill ? colour + '22' : undefined,
                dash: s.dash !== undefined ? s.dash || undefined : i % 2 ? [6, 3] : undefined, /* not colour alone */
                points: s.points === false ? {show: false} : undefined,
                value: function (u, v) {
                    return v === null || v === undefined ? '\u2014' : (s.fmt ? s.fmt(v) : Fmt.num(v));
                },
                spanGaps: false
            };
        }));
        var xs = data.t.map(function (ms) {
            return ms / 1000;
        });
        var cols = [xs].concat(data.series.map(function (s) {
            return s.values;
        }));
        var width = Math.max(240, el.clientWidth || 600);
        var u = new uPlot({
            width: width,
            height: opts.height || 220,
            series: series,
            axes: [axis, Object.assign({}, axis, {
                size: 60,
                values: function (u2, vals) {
                    return vals.map(function (v) {
                        return opts.yfmt ? opts.yfmt(v) : Fmt.num(v);
                    });
                }
            })],
            scales: {x: {time: true}, y: opts.ymax ? {range: [0, opts.ymax]} : {}},
            cursor: {focus: {prox: 16}},
            legend: {live: true}
        }, cols, el);
        var ro = typeof ResizeObserver !== 'undefined' ? new ResizeObserver(function () {
            var w = el.clientWidth;
            if (w > 0 && Math.abs(w - u.width) > 4)
                u.setSize({width: w, height: opts.height || 220});
        }) : null;
        if (ro)
            ro.observe(el);
        return {
            destroy: function () {
                if (ro)
                    ro.disconnect();
                u.destroy();
            }
        };
    }

    /* A labelled form field. opts: {label, name, type, value, options:
     * [[value, text]...] (a select), required, hint, placeholder, rows
     * (a textarea), attrs}. The error slot (`.field-error`, id
     * NAME-error) is filled by fieldErrors(). */
    function field(opts) {
        var id = 'f-' + opts.name.replace(/[^a-zA-Z0-9_-]/g, '-');
        var input;
        var common = Object.assign({id: id, name: opts.name, required: opts.required,
            placeholder: opts.placeholder, 'aria-describedby': id + '-error' + (opts.hint ? ' ' + id + '-hint' : '')},
        opts.attrs || {});
        if (opts.options) {
            input = h('select', common, opts.options.map(function (o) {
                return h('option', {value: o[0], selected: String(o[0]) === String(opts.value)}, o[1]);
            }));
        } else if (opts.rows) {
            input = h('textarea', Object.assign({rows: opts.rows, spellcheck: 'false'}, common));
            input.value = opts.value || '';
        } else {
            input = h('input', Object.assign({type: opts.type || 'text', value: opts.value}, common));
        }
        return h('div', {class: 'field', 'data-field': opts.name},
            h('label', {for: id}, opts.label),
            input,
            opts.hint ? h('small', {id: id + '-hint', class: 'hint'}, opts.hint) : null,
            h('div', {class: 'field-error', id: id + '-error', 'aria-live': 'polite'}));
    }

    /* Show an API error under the field it names: `err.field` is the API's
     * dotted path (spec.resources.gpus); `map` turns it into a form field
     * name, or null to show it in `fallback` instead. Returns the element
     * that shows it. */
    function fieldErrors(form, err, map, fallback) {
        form.querySelectorAll('.field-error').forEach(function (e) {
            e.textContent = '';
        });
        form.querySelectorAll('[aria-invalid]').forEach(function (e) {
            e.removeAttribute('aria-invalid');
        });
        if (fallback)
            clear(fallback);
        if (!err)
            return null;
        var name = err.field && map ? map(err.field) : null;
        var box = name ? form.querySelector('[data-field="' + name + '"]') : null;
        if (box) {
            var slot = box.querySelector('.field-error');
            slot.textContent = err.field + ': ' + err.message;
            var input = box.querySelector('input,select,textarea');
            if (input) {
                input.setAttribute('aria-invalid', 'true');
                input.focus();
            }
            return slot;
        }
        if (fallback) {
            fallback.appendChild(message(err));
            return fallback;
        }
        return null;
    }

    var toastTimer = null;

    /* A short notice at the bottom of the page, read by screen readers. */
    function toast(text) {
        var t = document.getElementById('toast');
        if (!t)
            return;
        t.textContent = text;
        t.classList.add('show');
        clearTimeout(toastTimer);
        toastTimer = setTimeout(function () {
            t.classList.remove('show');
        }, 4000);
    }

    return {
        h: h, append: append, clear: clear, link: link, badge: badge, message: message,
        kv: kv, meter: meter, table: table, pager: pager, chart: chart, field: field,
        fieldErrors: fieldErrors, toast: toast, cssVar: cssVar
    };
})();
