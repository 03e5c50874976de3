/*
 * 25-signin.js - signing in other than by a pasted token: a user name and
 * password (sluiced checks them against its LDAP server) and single
 * sign-on through the OIDC provider's device flow. The login page
 * (30-app.js) draws the forms; what is here has no DOM, so that web/test
 * can drive it with a fake API and a fake clock.
 *
 *   SignIn.methods(answer)   GET /v1/login's answer -> {token, password,
 *                            oidc}: what the page offers
 *   SignIn.password(post, user, pw)  POST /v1/login {user, password}
 *   SignIn.errorText(err, what)      the words for an ApiError of a
 *                            'password' sign-in, a device flow's 'start'
 *                            or its 'poll'
 *   SignIn.deviceFlow(opts)  one device-flow sign-in: asks for a code,
 *                            polls at the server's interval (never faster;
 *                            5 s more on slow_down, or the interval the
 *                            answer gives) until the user approved,
 *                            was refused, the code expired or cancel()
 *
 * A token got either way goes to Api.login like a pasted one; the
 * password is sent once and kept nowhere.
 */
'use strict';

var SignIn = (function () {
    /* GET /v1/login -> what to offer. A token is always offered (the
     * server's answer may fail: an older sluiced has no /v1/login). */
    function methods(answer) {
        var m = answer && Array.isArray(answer.methods) ? answer.methods : [];
        var o = answer && answer.oidc && typeof answer.oidc === 'object' ? answer.oidc : null;
        return {
            token: true,
            password: m.indexOf('password') >= 0,
            oidc: m.indexOf('oidc') >= 0 ? {issuer: o && typeof o.issuer === 'string' ? o.issuer : '',
                clientId: o && typeof o.client_id === 'string' ? o.client_id : ''} : null
        };
    }

    /* Only http(s) addresses become links: a provider's answer must not
     * make a javascript: link on our page. */
    function safeUrl(u) {
        if (typeof u !== 'string')
            return null;
        return /^https?:\/\/[^\s]+$/i.test(u) ? u : null;
    }

    /* Seconds in a Retry-After header (a number; an HTTP date is read as
     * well), or null. */
    function retrySeconds(err, now) {
        var v = err && err.retryAfter;
        if (v === null || v === undefined || v === '')
            return null;
        if (/^\d+$/.test(String(v).trim()))
            return Number(v);
        var t = Date.parse(v);
        if (isNaN(t))
            return null;
        return Math.max(0, Math.ceil((t - (now === undefined ? Date.now() : now)) / 1000));
    }

    /* The server's message as a sentence, to go before another. */
    function sentence(msg) {
        msg = String(msg || '').trim();
        return msg && !/[.!?]$/.test(msg) ? msg + '.' : msg;
    }

    /* 42 -> "42 seconds", 900 -> "15 minutes" (Retry-After's seconds). */
    function inWords(sec) {
        if (sec < 120)
            return sec + ' second' + (sec === 1 ? '' : 's');
        var min = Math.ceil(sec / 60);
        return min + ' minutes';
    }

    var UNREACHABLE = 'The identity provider cannot be reached just now; try again later. API tokens still work: paste one below.';

    /* The words for an error of `what`: 'password' (POST /v1/login with a
     * name and password), 'start' (POST /v1/login/device) or 'poll' (POST
     * /v1/login with the device code). `user` names the account for 409. */
    function errorText(err, what, user) {
        var s = err && err.status;
        var msg = (err && err.message) || '';
        if (s === 0)
            return msg || 'sluiced did not answer.';
        if (s === 503)
            return UNREACHABLE;
        if (s === 429) {
            var sec = retrySeconds(err);
            return 'Too many failed sign-ins for this name or address. ' +
                (sec !== null ? 'Try again in ' + inWords(sec) + '.' : 'Try again later.');
        }
        if (what === 'password') {
            if (s === 401)
                return 'Wrong user name or password.';
            if (s === 403)
                return 'Your password is right, but sluiced gives your account no access: ' + sentence(msg) +
                    ' Ask your administrator to add you to a group that Sluice maps to a team.';
            if (s === 409)
                return (user ? '"' + user + '"' : 'This name') + ' is a local Sluice account, not one of the directory: ' +
                    'sign in with its API token instead.';
            if (s === 404)
                return 'This server checks no passwords (no LDAP server is configured): sign in with an API token.';
            if (s === 400)
                return (err.field === 'password' ? 'Password' : err.field === 'user' ? 'User name' : 'Request') + ': ' + msg;
        } else if (what === 'start') {
            if (s === 404)
                return 'This server has no single sign-on configured: sign in with an API token.';
        } else if (what === 'poll') {
            if (s === 403)
                return 'Single sign-on did not complete: ' + sentence(msg) + ' Start again for a new code.';
            if (s === 401)
                return 'sluiced refused the identity provider\'s answer: ' + sentence(msg) + ' Start again, or use an API token.';
        }
        return msg || ('HTTP ' + s);
    }

    /* POST /v1/login {user, password}: resolves to the token body.
     * `post(path, body)` is Api.post without the caller's token. */
    function password(post, user, pw) {
        return post('/v1/login', {user: user, password: pw});
    }

    /* One device-flow sign-in. opts:
     *   post(path, body)   -> promise of the decoded 2xx body, rejects with
     *                        an ApiError (status, message, retryAfter)
     *   setTimer(fn, ms), clearTimer(handle), now() -> ms: the clock
     *   onCode({userCode, uri, expiresAt, interval})  the code to show
     *   onWait({interval, note})  still pending (note: a passing problem)
     *   onDone(tokenBody)  approved
     *   onFail(text, err)  refused, expired or a lasting error
     * Returns {start(), cancel(), state()}. Polls one at a time; after
     * cancel() (or done, or failed) no timer is left and late answers are
     * dropped. Network errors, 503 and 429 while polling are passing: the
     * poll is tried again at the interval (or the Retry-After, if longer)
     * until the code expires. */
    function deviceFlow(opts) {
        var st = 'idle';
        var timer = null;
        var intervalMs = 5000;
        var deadline = 0;
        var code = null;

        function stop(to) {
            st = to;
            if (timer !== null) {
                opts.clearTimer(timer);
                timer = null;
            }
        }

        function fail(text, err) {
            stop('failed');
            opts.onFail(text, err || null);
        }

        function schedule(ms) {
            timer = opts.setTimer(function () {
                timer = null;
                poll();
            }, ms);
        }

        function expired() {
            fail('The code expired before it was approved. Start again for a new code.');
        }

        function poll() {
            if (st !== 'waiting')
                return;
            if (opts.now() >= deadline) {
                expired();
                return;
            }
            opts.post('/v1/login', {device_code: code}).then(function (b) {
                if (st !== 'waiting')
                    return;
                if (b && b.pending) {
                    /* The interval grows, never shrinks: to the one given,
                     * else by 5 s on slow_down (RFC 8628, 3.5). */
                    if (typeof b.interval === 'number' && isFinite(b.interval)) {
                        if (b.interval * 1000 > intervalMs)
                            intervalMs = b.interval * 1000;
                    } else if (b.slow_down) {
                        intervalMs += 5000;
                    }
                    opts.onWait({interval: intervalMs / 1000, note: null});
                    schedule(intervalMs);
                } else if (b && typeof b.token === 'string' && b.token) {
                    stop('done');
                    opts.onDone(b);
                } else {
                    fail('sluiced gave an answer the dashboard does not know; start again.');
                }
            }, function (e) {
                if (st !== 'waiting')
                    return;
                var s = e && e.status;
                if (s === 0 || s === 503 || s === 429) {
                    var ra = retrySeconds(e, opts.now());
                    var ms = Math.max(intervalMs, ra !== null ? ra * 1000 : 0);
                    opts.onWait({interval: ms / 1000, note: errorText(e, 'poll')});
                    schedule(ms);
                    return;
                }
                fail(errorText(e, 'poll'), e);
            });
        }

        function start() {
            if (st === 'starting' || st === 'waiting')
                return;
            st = 'starting';
            opts.post('/v1/login/device', null).then(function (d) {
                if (st !== 'starting')
                    return;
                var uri = d && (safeUrl(d.verification_uri_complete) || safeUrl(d.verification_uri));
                if (!d || typeof d.device_code !== 'string' || !d.device_code || typeof d.user_code !== 'string' || !uri) {
                    fail('sluiced gave no usable sign-in code; start again.');
                    return;
                }
                code = d.device_code;
                intervalMs = 1000 * (typeof d.interval === 'number' && d.interval >= 1 ? d.interval : 5);
                var life = typeof d.expires_in === 'number' && d.expires_in > 0 ? d.expires_in : 600;
                deadline = opts.now() + life * 1000;
                st = 'waiting';
                opts.onCode({userCode: d.user_code, uri: uri, expiresAt: deadline, interval: intervalMs / 1000});
                schedule(intervalMs);
            }, function (e) {
                if (st !== 'starting')
                    return;
                fail(errorText(e, 'start'), e);
            });
        }

        function cancel() {
            if (st === 'starting' || st === 'waiting')
                stop('cancelled');
        }

        return {
            start: start, cancel: cancel,
            state: function () {
                return st;
            }
        };
    }

    return {methods: methods, safeUrl: safeUrl, retrySeconds: retrySeconds, errorText: errorText,
        password: password, deviceFlow: deviceFlow};
})();

if (typeof module !== 'undefined' && module.exports)
    module.exports = SignIn;
