/*
 * 00-format.js - formatting of the figures the pages show: numbers, units
 * (GPU-hours, bytes, energy, money, CO2), durations, times and time ranges.
 * Pure functions, no DOM: node's test runner loads this file as a module
 * (web/test/format.test.js), the browser as a classic script that defines
 * the global `Fmt`.
 */
'use strict';

var Fmt = (function () {
    /* A number with at most `digits` decimals, grouped by thousands, and
     * no trailing zeros: 1234.5 -> "1,234.5". null/undefined/NaN -> "—". */
    function num(v, digits) {
        if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v))
            return '\u2014';
        var d = digits === undefined ? 2 : digits;
        return unsignZero(v.toLocaleString('en-US', {maximumFractionDigits: d, minimumFractionDigits: 0}));
    }

    /* "-0" and "-0.00" (a small negative rounded away) read as zero. */
    function unsignZero(s) {
        return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s;
    }

    function int(v) {
        return num(v, 0);
    }

    /* A fraction 0..1 as a percentage: 0.423 -> "42.3 %". */
    function pct(v, digits) {
        if (v === null || v === undefined || !isFinite(v))
            return '\u2014';
        return num(v * 100, digits === undefined ? 1 : digits) + '\u00a0%';
    }

    var BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

    /* Bytes in binary units: 85899345920 -> "80 GiB". */
    function bytes(v) {
        if (v === null || v === undefined || !isFinite(v))
            return '\u2014';
        var i = 0, x = Math.abs(v);
        while (x >= 1024 && i < BYTE_UNITS.length - 1) {
            x /= 1024;
            i++;
        }
        return (v < 0 ? '-' : '') + num(x, x < 10 && i > 0 ? 1 : 0) + '\u00a0' + BYTE_UNITS[i];
    }

    /* A count of GPUs, whole or fractional: 1.5 -> "1.5", 0.25 -> "0.25". */
    function gpus(v) {
        return num(v, 2);
    }

    /* GPU milli-units as GPUs: 250 -> "0.25". */
    function milli(v) {
        return v === null || v === undefined ? '\u2014' : num(v / 1000, 3);
    }

    /* Money in the report's currency: (12.5, "EUR") -> "12.50 EUR". */
    function money(v, currency) {
        if (v === null || v === undefined || !isFinite(v))
            return '\u2014';
        var s = unsignZero(v.toLocaleString('en-US', {minimumFractionDigits: 2, maximumFractionDigits: 2}));
        return currency ? s + '\u00a0' + currency : s;
    }

    function kwh(v) {
        return v === null || v === undefined ? '\u2014' : num(v, 3) + '\u00a0kWh';
    }

    /* Kilograms of CO2e, in grams below one kilogram. */
    function co2(v) {
        if (v === null || v === undefined || !isFinite(v))
            return '\u2014';
        if (Math.abs(v) < 1)
            return num(v * 1000, 1) + '\u00a0g';
        return num(v, 2) + '\u00a0kg';
    }

    /* A duration in seconds, as its two largest units: 3725 -> "1h 2m",
     * 42 -> "42s", 0.25 -> "250ms", 0 -> "0s". */
    function duration(sec) {
        if (sec === null || sec === undefined || !isFinite(sec))
            return '\u2014';
        var neg = sec < 0;
        var s = Math.abs(sec);
        var out;
        var msec = Math.round(s * 1000);
        if (msec === 0)
            return '0s';
        if (msec < 1000) {
            out = msec + 'ms';
        } else {
            s = Math.floor(msec / 1000);
            var parts = [[86400, 'd'], [3600, 'h'], [60, 'm'], [1, 's']];
            var got = [];
            for (var i = 0; i < parts.length && got.length < 2; i++) {
                var n = Math.floor(s / parts[i][0]);
                if (n > 0 || got.length > 0) {
                    if (n > 0)
                        got.push(n + parts[i][1]);
                    else
                        break; /* "1h" rather than "1h 0m" */
                    s -= n * parts[i][0];
                }
            }
            out = got.join(' ');
        }
        return (neg ? '-' : '') + out;
    }

    function pad(n) {
        return (n < 10 ? '0' : '') + n;
    }

    /* A time (ms since the epoch) as local "YYYY-MM-DD HH:MM:SS";
     * null -> "—". `utc` true formats in UTC instead. */
    function time(ms, utc) {
        if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0)
            return '\u2014';
        var d = new Date(ms);
        if (utc)
            return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()) +
                ' ' + pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()) + ':' + pad(d.getUTCSeconds());
        return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
            pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    }

    /* How long ago `ms` was, from `now` (both ms): "5m ago", "in 2h". */
    function ago(ms, now) {
        if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0)
            return '\u2014';
        var diff = ((now === undefined ? Date.now() : now) - ms) / 1000;
        if (Math.abs(diff) < 1)
            return 'now';
        return diff >= 0 ? duration(diff) + ' ago' : 'in ' + duration(-diff);
    }

    /* A date "YYYY-MM-DD" (UTC) of ms since the epoch. */
    function day(ms) {
        var d = new Date(ms);
        return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate());
    }

    /* The named ranges of the history views, their length in ms. */
    var RANGES = {hour: 3600e3, day: 86400e3, week: 7 * 86400e3, month: 30 * 86400e3};

    /* The [from, to) of a named range ending at `now` (ms), the report's
     * way: `to` is now, `from` the range before it. Unknown names throw. */
    function range(name, now) {
        if (!Object.prototype.hasOwnProperty.call(RANGES, name))
            throw new Error('unknown range: ' + name);
        var to = now === undefined ? Date.now() : now;
        return {from: to - RANGES[name], to: to};
    }

    /* A calendar period of the report (day, week, month) containing `ms`,
     * in UTC as the metering does: its first and last day "YYYY-MM-DD".
     * Weeks start on Monday (ISO 8601). */
    function period(name, ms) {
        var d = new Date(ms);
        var y = d.getUTCFullYear(), m = d.getUTCMonth(), dd = d.getUTCDate();
        var start, end;
        if (name === 'day') {
            start = Date.UTC(y, m, dd);
            end = start;
        } else if (name === 'week') {
            var wd = (d.getUTCDay() + 6) % 7; /* Monday = 0 */
            start = Date.UTC(y, m, dd - wd);
            end = start + 6 * 86400e3;
        } else if (name === 'month') {
            start = Date.UTC(y, m, 1);
            end = Date.UTC(y, m + 1, 0);
        } else {
            throw new Error('unknown period: ' + name);
        }
        return {from: day(start), to: day(end)};
    }

    /* A job's resources per task, from its normalised spec.resources, in a
     * few characters: "2×H100|A100", "0.5 GPU", "4 CPU". */
    function resources(res, tasks) {
        if (!res)
            return '\u2014';
        var parts = [];
        var models = res.gpuModels && res.gpuModels.length ? res.gpuModels : null;
        if (res.gpuMilli)
            parts.push(milli(res.gpuMilli) + (models ? '\u00d7' + models.join('|') : ' GPU'));
        else if (res.gpus)
            parts.push(res.gpus + (models ? '\u00d7' + models.join('|') : ' GPU'));
        var cpu = res.cpuMilli !== undefined ? res.cpuMilli / 1000 : res.cpus;
        if (cpu)
            parts.push(num(cpu, 3) + ' CPU');
        var s = parts.length ? parts.join(', ') : 'CPU only';
        if (tasks && tasks > 1)
            s = tasks + ' tasks \u00d7 ' + s;
        return s;
    }

    /* An RFC 3339 time of the API ("2026-12-02T11:00:00.000Z") or ms as ms;
     * null when absent or unreadable. */
    function ms(v) {
        if (v === null || v === undefined || v === '')
            return null;
        if (typeof v === 'number')
            return v;
        var t = Date.parse(v);
        return isNaN(t) ? null : t;
    }

    return {
        num: num, int: int, pct: pct, bytes: bytes, gpus: gpus, milli: milli,
        money: money, kwh: kwh, co2: co2, duration: duration, time: time, ago: ago,
        day: day, range: range, period: period, resources: resources, ms: ms,
        RANGES: RANGES
    };
})();

if (typeof module !== 'undefined' && module.exports)
    module.exports = Fmt;
